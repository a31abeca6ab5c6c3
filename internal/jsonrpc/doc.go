// Package jsonrpc is oriond's JSON-RPC 2.0 transport around
// github.com/sourcegraph/jsonrpc2, through the library's own extension
// points: an ObjectStream for the daemon (ServerStream) and an ObjectCodec
// for the Go client (ClientCodec). It frames messages as LSP does
// (Content-Length headers), reads them within limits, answers malformed
// ones as JSON-RPC says, echoes every request id exactly as sent, and
// encodes a large request's params once.
//
// Why not the library alone: jsonrpc2 decodes a request's params into
// generic values and marshals them back (a 1 MiB chunk read three times
// over), holds ids as int64 (so -1, 1.5 or 2^64 broke the connection) and
// reads frames without bounds. So ServerStream parses each frame itself, in
// one pass, and hands jsonrpc2 only a placeholder ({"method":""}, the least
// it decodes as a request, and still 20 allocations of encoding/json's),
// decoded by jsonrpc2 once per connection and copied for every later
// request; the handler, called on the read loop right after, takes the
// request itself from the stream (Take), and replies with the stream's
// number for it, which the stream swaps for the client's id as it writes
// the reply. That pass checks the params' longest string (an
// append's chunk) on its way and says what it found (LongString), so that
// the handler's decoder does not read it again; and the frame is read into
// a buffer the handler hands back once it is done with the params
// (Raw.Release), for a later frame. A frame may also carry a request's
// content raw after its JSON (protocol.HeaderRawLength, counted by its
// Content-Length): the stream hands those bytes over as they were read,
// in the same buffer (Raw.Content), with no pass over them, and the
// handler decides what they stand for. The reply is encoded once, from the typed response
// jsonrpc2 shows the stream through its OnSend option just before it asks
// the stream to write it, not read back from what jsonrpc2 would marshal.
// ClientCodec writes each request from the typed value jsonrpc2 shows it
// through OnSend, and a Call's raw content (Call.SendRaw) after its JSON
// in one writev, never copied into the frame. A call of the Go client (a Call) goes through jsonrpc2
// as a notification with the id the codec picked (jsonrpc2.PickID) and no
// params; the codec writes it with that id and the params encoded once,
// and reads its reply itself, never handing it to jsonrpc2, whose reading
// of a reply (encoding/json, twice, into generic values, then a copy of
// the result) cost more than the rest of the client's append. On a
// connection given to the codec (ClientCodec.Conn), a Call waiting alone
// reads its reply from the socket itself, rather than have jsonrpc2's read
// loop read it and wake the caller (read.go).
//
// Why these two stay as they are: jsonrpc2 hands a stream's ReadObject an
// unexported message type that only its own UnmarshalJSON fills, and that
// decodes a request's params into generic values and marshals them back,
// and its id into an int64; and a client's Call marshals its params, then
// the request around them, before any option or codec sees them. No
// extension point of the library's reaches either step.
//
// What this relies on in jsonrpc2, each pinned by a test of
// jsonrpc2_test.go, so an upgrade that changes one fails there:
//
//   - the value ReadObject is given decodes the placeholder as a Request
//     (a notification, with no params), and a response with an id
//     jsonrpc2 never saw is written all the same;
//   - that value is a pointer to a struct, the same type each time, and a
//     copy of the first one decoded reaches the Handler as a Request
//     (TestServerStreamHandsJSONRPC2OneMessage; another type is decoded
//     each time);
//   - Handle is called on the read loop, one request at a time in the order
//     read, and ReadObject is not called again until it returns (so the
//     request Take returns is the one jsonrpc2 handed the Handler);
//   - Reply and ReplyWithError write an object whose JSON is a response:
//     the request's numeric id, and a result or an error (code, message,
//     data); Notify writes one with a method and params and no id;
//   - OnSend is called with each response or notification, typed, right
//     before the WriteObject that writes it, with no other WriteObject in
//     between however many goroutines send at once;
//   - a ReadObject error ends the Conn: DisconnectNotify fires, the stream
//     is closed, and later replies fail with ErrClosed;
//   - a client Call marshals json.RawMessage params verbatim as the value
//     of "params", numbers its requests, and completes on a response with
//     that id read by VSCodeObjectCodec from a frame as WriteFrame writes
//     it; an error response comes back as a *jsonrpc2.Error with its data;
//   - Notify with PickID shows OnSend a notification carrying that id,
//     right before its WriteObject, and keeps nothing to wait for; a
//     ReadObject may read several frames before it returns a message
//     (TestClientCallTakesItsResultRaw).
//
// Nothing here depends on the byte layout jsonrpc2 marshals to: replies
// and requests are read back as JSON objects (readMembers) and rebuilt.
package jsonrpc
