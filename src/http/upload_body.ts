/**
 * The bytes of an uploaded file, from either a `multipart/form-data` body (one named file field,
 * parsed as it streams by busboy, never buffered) or a raw `application/octet-stream` body.
 *
 * @module
 */
import { Invalid } from "../errors/mod.ts";
import type { UploadBody } from "../streams/mod.ts";
import { multipartUpload } from "./multipart_upload.ts";

/** How the caller takes the file's chunks. */
export interface UploadBodyOptions {
  /**
   * The caller copies each chunk before it asks for the next (a file sink does): a multipart
   * file is then read into one buffer used again and again, where a new buffer a chunk waited
   * for the garbage collector (a 1 GiB multipart upload peaked at 185-194 MB of RSS). A raw
   * body's chunks are the body's own either way (a file sink reads it into its buffers).
   */
  lentChunks?: boolean;
}

/** Reads the upload from a raw body, or the part named `field` from a multipart body. */
export async function uploadBody(
  request: Request,
  field: string,
  options: UploadBodyOptions = {},
): Promise<UploadBody> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!request.body) throw new Invalid("upload body is empty: send the file");
  const length = request.headers.get("content-length");
  const bodyLength = length === null ? undefined : Number(length);
  if (contentType.toLowerCase().startsWith("multipart/form-data")) {
    const file = await multipartUpload(request.body, contentType, field, {
      lentChunks: options.lentChunks ?? false,
    });
    return { ...file, declaredSize: undefined, bodyLength };
  }
  return {
    chunks: request.body,
    declaredSize: bodyLength,
    bodyLength,
    filename: undefined,
    fields: new Map(),
    complete: Promise.resolve(),
  };
}
