import type { ErrorData } from "./protocol";

/**
 * OrionError is a request the daemon refused. `code` is one of ErrorCodes
 * (or a JSON-RPC standard code) and `reason` the stable string in its data.
 */
export class OrionError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly data: ErrorData;

  constructor(code: number, message: string, data?: Partial<ErrorData>) {
    super(message);
    this.name = "OrionError";
    this.code = code;
    this.data = { reason: "", ...data };
    this.reason = this.data.reason;
  }
}

/** DaemonUnreachableError says no daemon answered on the socket. */
export class DaemonUnreachableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DaemonUnreachableError";
  }
}

/**
 * UntrustedSocketError says the client refused a socket that is not the
 * user's (it, or its directory, belongs to another user or is writable by
 * others) and sent it nothing. Node cannot read a Unix socket's peer
 * credentials, so unlike the Go client it checks the files only.
 */
export class UntrustedSocketError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UntrustedSocketError";
  }
}

/**
 * ConnectionLostError says the connection broke before the reply came: the
 * request may or may not have taken effect. Reconnect and resume to know.
 */
export class ConnectionLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConnectionLostError";
  }
}

/** transient reports whether err is a transport failure worth a reconnect. */
export function isTransient(err: unknown): boolean {
  return err instanceof ConnectionLostError || err instanceof DaemonUnreachableError;
}
