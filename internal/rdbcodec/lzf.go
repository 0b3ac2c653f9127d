package rdbcodec

// lzfCompress is an LZF compressor (the format of liblzf's lzf_compress,
// which Redis decompresses): literal runs of 1 to 32 bytes, and back
// references of 3 to 264 bytes within 8 KiB found through a hash of the
// next 3 bytes. It returns nil unless the output is shorter than
// len(in)-4 bytes, as Redis only stores compressions that save that much.
func lzfCompress(in []byte) []byte {
	n := len(in)
	limit := n - 4
	if limit <= 0 {
		return nil
	}
	const hlog = 14
	var table [1 << hlog]int32 // position+1 of the last 3-byte sequence with that hash
	out := make([]byte, 0, limit)
	litStart, lit := 0, 0 // the pending literal run
	flush := func() bool {
		for lit > 0 {
			k := min(lit, 32)
			if len(out)+1+k > limit {
				return false
			}
			out = append(out, byte(k-1))
			out = append(out, in[litStart:litStart+k]...)
			litStart += k
			lit -= k
		}
		return true
	}
	ip := 0
	for ip+2 < n {
		h := (uint32(in[ip])<<16 | uint32(in[ip+1])<<8 | uint32(in[ip+2])) * 2654435761 >> (32 - hlog)
		ref := int(table[h]) - 1
		table[h] = int32(ip + 1)
		if ref >= 0 && ip-ref-1 < 1<<13 && in[ref] == in[ip] && in[ref+1] == in[ip+1] && in[ref+2] == in[ip+2] {
			l, maxl := 3, min(n-ip, 264)
			for l < maxl && in[ref+l] == in[ip+l] {
				l++
			}
			if !flush() {
				return nil
			}
			off, L := ip-ref-1, l-2
			if L < 7 {
				out = append(out, byte(L<<5|off>>8), byte(off))
			} else {
				out = append(out, byte(7<<5|off>>8), byte(L-7), byte(off))
			}
			if len(out) > limit {
				return nil
			}
			ip += l
			litStart = ip
			continue
		}
		lit++
		ip++
	}
	lit += n - ip
	if !flush() {
		return nil
	}
	return out
}
