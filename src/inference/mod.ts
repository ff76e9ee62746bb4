/**
 * Inference on the node's models: the service that loads them into engine processes and
 * queues calls fairly, the OpenAI-compatible format, usage per caller, and its routes.
 *
 * @module
 */
export * from "./caller_files.ts";
export * from "./caller_usage.ts";
export * from "./inference_service.ts";
export * from "./load_messages.ts";
export * from "./mesh_forward.ts";
export * from "./mesh_router.ts";
export * from "./mesh_ranking.ts";
export * from "./model_adverts.ts";
export * from "./openai_format.ts";
export * from "./routes.ts";
export * from "./service.ts";
