package render

// EncodeEntry encodes the JSON array raw of count values in the manifest
// cache's entry format (gzip behind a header), for other content the
// workers keep in the same Redis behind a reference.
func EncodeEntry(raw []byte, count int) ([]byte, error) { return encodeEntry(raw, count) }

// DecodeEntry returns the JSON array of an entry EncodeEntry made, within
// the cache's size bound.
func DecodeEntry(b []byte) ([]byte, error) { return decodeEntry(b) }
