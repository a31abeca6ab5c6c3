package protocol

// Method names served by oriond over JSON-RPC 2.0.
const (
	MethodSessionBegin     = "session.begin"
	MethodSessionAppend    = "session.append"
	MethodSessionFinalize  = "session.finalize"
	MethodSessionAbort     = "session.abort"
	MethodSessionGet       = "session.get"
	MethodSessionList      = "session.list"
	MethodDaemonStatus     = "daemon.status"
	MethodToolsDefinitions = "tools.definitions"
)

// Methods lists every method the daemon serves, for status and discovery.
var Methods = []string{
	MethodSessionBegin,
	MethodSessionAppend,
	MethodSessionFinalize,
	MethodSessionAbort,
	MethodSessionGet,
	MethodSessionList,
	MethodSessionResume,
	MethodSessionContinue,
	MethodSessionClean,
	MethodSessionUndo,
	MethodTxBegin,
	MethodTxCommit,
	MethodTxAbort,
	MethodTxGet,
	MethodDaemonStatus,
	MethodToolsDefinitions,
	MethodTraceList,
	MethodTraceFollow,
}
