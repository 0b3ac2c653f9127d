package rdbcodec

import "errors"

// FUNCTION DUMP's payload (Redis 7's rdbSaveFunctions): for each library
// the opcode RDB_OPCODE_FUNCTION2 and its code as an RDB string, then
// the DUMP footer (RDB version, CRC64).

const opFunction2 = 245

// ErrNotFunction is RESTORE's "given type is not a function".
var ErrNotFunction = errors.New("rdbcodec: not a function payload")

// EncodeFunctions returns FUNCTION DUMP's payload for the libraries'
// codes, in the order given.
func EncodeFunctions(codes [][]byte) []byte {
	e := &encoder{}
	for _, c := range codes {
		e.b = append(e.b, opFunction2)
		e.str(c)
	}
	b := append(e.b, Version&0xff, Version>>8)
	crc := CRC64(0, b)
	for i := 0; i < 8; i++ {
		b = append(b, byte(crc>>(8*i)))
	}
	return b
}

// DecodeFunctions verifies a FUNCTION RESTORE payload (ErrChecksum) and
// returns its libraries' codes (ErrNotFunction for another opcode,
// ErrFormat for a malformed one).
func DecodeFunctions(payload []byte, lim Limits) ([][]byte, error) {
	if err := Verify(payload); err != nil {
		return nil, err
	}
	if lim.MaxString <= 0 {
		lim.MaxString = defaultLimit
	}
	if lim.MaxInflate <= 0 {
		lim.MaxInflate = defaultLimit
	}
	body := payload[:len(payload)-10]
	d := &decoder{b: body, lim: lim, budget: lim.MaxInflate}
	var codes [][]byte
	for d.left() > 0 {
		op, err := d.byte1()
		if err != nil {
			return nil, ErrFormat
		}
		if op != opFunction2 {
			return nil, ErrNotFunction
		}
		c, err := d.str()
		if err != nil {
			return nil, ErrFormat
		}
		codes = append(codes, append([]byte(nil), c...))
	}
	return codes, nil
}
