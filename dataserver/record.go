package dataserver

// chunkBytes is about the size of one chunk of migrated records: small
// enough that a chunk is cheap to hold and apply under its bucket's lock,
// large enough that the per-item costs (sequence numbers, acks, locks)
// are spread over hundreds of small records.
const chunkBytes = 32 << 10
