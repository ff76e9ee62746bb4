/**
 * The framing shared by the node, the hub and the container channel: messages and routing
 * headers of the hub tunnel, the flow-controlled stream mux and the requests over it, frames
 * over a WebSocket, a raw socket or a pipe.
 *
 * @module
 */
export * from "./bytes.ts";
export * from "./messages.ts";
export * from "./mux_codec.ts";
export * from "./mux_requests.ts";
export * from "./pipe_frames.ts";
export * from "./raw_socket.ts";
export * from "./routing.ts";
export * from "./stream_mux.ts";
export * from "./wire_frames.ts";
