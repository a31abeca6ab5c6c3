package protocol

import "reflect"

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

// Method is one JSON-RPC method of the daemon: its name, and as type
// parameters the params it takes (P) and the result it answers with (R).
// The daemon's handler for a method and a Go client's call of it are both
// typed by the same Method value, so the compiler holds them to one
// contract.
type Method[P, R any] struct {
	Name string
}

// Spec describes m without its type parameters, for tables and generators.
func (m Method[P, R]) Spec() MethodSpec {
	return MethodSpec{Name: m.Name, Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R]()}
}

// MethodSpec is a Method as a value: its name and its params and result
// types.
type MethodSpec struct {
	Name   string
	Params reflect.Type
	Result reflect.Type
}

// NoParams is the params of a method that takes none. Whatever a client
// sends as params to such a method is ignored.
type NoParams struct{}

// Every method, typed. Adding a method: its name above (or beside its
// types), its Method here, its entry in MethodSpecs, then its entry in the
// daemon's method table (daemon/methods.go).
var (
	SessionBegin     = Method[BeginParams, BeginResult]{MethodSessionBegin}
	SessionAppend    = Method[AppendParams, AppendResult]{MethodSessionAppend}
	SessionFinalize  = Method[FinalizeParams, FinalizeResult]{MethodSessionFinalize}
	SessionAbort     = Method[SessionIDParams, AbortResult]{MethodSessionAbort}
	SessionGet       = Method[SessionIDParams, SessionInfo]{MethodSessionGet}
	SessionList      = Method[ListParams, ListResult]{MethodSessionList}
	SessionResume    = Method[SessionIDParams, ResumeResult]{MethodSessionResume}
	SessionContinue  = Method[ContinueParams, BeginResult]{MethodSessionContinue}
	SessionClean     = Method[CleanParams, CleanResult]{MethodSessionClean}
	SessionUndo      = Method[SessionIDParams, UndoResult]{MethodSessionUndo}
	TxBegin          = Method[TxBeginParams, TxBeginResult]{MethodTxBegin}
	TxCommit         = Method[TxCommitParams, TxCommitResult]{MethodTxCommit}
	TxAbort          = Method[TxIDParams, TxInfo]{MethodTxAbort}
	TxGet            = Method[TxIDParams, TxInfo]{MethodTxGet}
	DaemonStatus     = Method[NoParams, StatusResult]{MethodDaemonStatus}
	ToolsDefinitions = Method[NoParams, ToolsResult]{MethodToolsDefinitions}
	TraceList        = Method[TraceListParams, TraceListResult]{MethodTraceList}
	TraceFollow      = Method[TraceFollowParams, TraceFollowResult]{MethodTraceFollow}
)

// MethodSpecs is every method the daemon serves, in the order daemon.status
// lists them. The daemon's method table serves exactly these, with these
// types (a daemon test fails otherwise), and the Node package's protocol
// file is generated from them.
var MethodSpecs = []MethodSpec{
	SessionBegin.Spec(),
	SessionAppend.Spec(),
	SessionFinalize.Spec(),
	SessionAbort.Spec(),
	SessionGet.Spec(),
	SessionList.Spec(),
	SessionResume.Spec(),
	SessionContinue.Spec(),
	SessionClean.Spec(),
	SessionUndo.Spec(),
	TxBegin.Spec(),
	TxCommit.Spec(),
	TxAbort.Spec(),
	TxGet.Spec(),
	DaemonStatus.Spec(),
	ToolsDefinitions.Spec(),
	TraceList.Spec(),
	TraceFollow.Spec(),
}

// Methods lists every method the daemon serves, for status and discovery.
var Methods = methodNames(MethodSpecs)

func methodNames(specs []MethodSpec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}
