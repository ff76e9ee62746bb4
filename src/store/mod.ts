/**
 * The model registry: its routes, the records, the files, provisioning (upload and download),
 * shared transfers with progress, the HTTP source (resume, retries, stall watchdog), GGUF
 * metadata and recovery after a crash.
 *
 * @module
 */
export type { DownloadSource, FileSource } from "./download_file.ts";
export * from "./gguf_metadata.ts";
export * from "./model_files.ts";
export * from "./model_format.ts";
export * from "./model_loading.ts";
export * from "./model_records.ts";
export * from "./peer_files.ts";
export * from "./provisioning.ts";
export * from "./registry.ts";
export * from "./routes.ts";
export * from "./service.ts";
export * from "./transfers.ts";
