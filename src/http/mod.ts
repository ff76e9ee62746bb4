/**
 * The HTTP edge of node and hub: the request pipeline, route mounting from the generated tables,
 * typed answers, the one table from domain errors to statuses, errorPayload and the error shapes,
 * auth, request bodies (JSON, uploads), file responses with ranges, the JSON cache, event streams
 * (whose failures end them through errorPayload) and CORS. Domain packages import it only where
 * they answer HTTP; validation and byte helpers are src/streams'.
 *
 * @module
 */
export * from "./auth.ts";
export * from "./cors.ts";
export * from "./error_statuses.ts";
export * from "./errors.ts";
export * from "./file_response.ts";
export * from "./input.ts";
export * from "./json_cache.ts";
export * from "./pipeline.ts";
export * from "./reply.ts";
export * from "./routes.ts";
export * from "./service.ts";
export * from "./sse.ts";
export * from "./upload_body.ts";
