// Node client of oriond, the Orion write-session daemon.
export * from "./protocol";
export * from "./errors";
export { OrionClient, ClientOptions, ClientEvents } from "./client";
export { SessionWatcher, SessionEvent, WatcherOptions, WatcherEvents, sessionEvent, PathRefusals } from "./watch";
export { StreamController, ControllerOptions, FinishInterrupted } from "./controller";
export * from "./events";
export { turnMessages, ChatMessage } from "./messages";
export { replay } from "./replay";
export { checkSocket, defaultSocket } from "./paths";
export { scanArgs } from "./args";
