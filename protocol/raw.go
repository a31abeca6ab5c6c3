package protocol

// A request's content may travel as bytes rather than as a JSON string: the
// frame then carries the header HeaderRawLength, and the last bytes of its
// body, after the request's JSON, are the value of one field of the
// method's params (RawContentFields), which its JSON leaves out. A large
// chunk is then never quoted by the client nor scanned and unquoted by the
// daemon. A client sends it only to a daemon that lists FeatureRawContent
// in daemon.status's features: a daemon without it reads such a frame's
// body as JSON and refuses it.
const (
	// HeaderRawLength is the frame header "Orion-Raw-Length: M": the last
	// M bytes of the body, which Content-Length counts, are the content,
	// raw; the first Content-Length - M bytes are the request's JSON.
	HeaderRawLength = "Orion-Raw-Length"
	// FeatureRawContent, in StatusResult.Features, says the daemon reads
	// HeaderRawLength.
	FeatureRawContent = "raw_content"
)

// RawContentFields names, for each method that takes raw content, the
// field of its params the raw bytes stand for. The field must then be
// absent from the params' JSON, and the bytes obey its rules: a chunk or a
// file's content is valid UTF-8, at most --max-chunk-bytes.
var RawContentFields = map[string]string{
	MethodSessionAppend: "chunk",
	MethodSessionWrite:  "content",
}

// Features are what this version of the daemon can do beyond the methods it
// lists, for StatusResult.Features.
var Features = []string{FeatureRawContent}
