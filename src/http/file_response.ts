/**
 * Serves a file from disk with Content-Length, ETag, Last-Modified, single byte ranges (206,
 * 416), If-None-Match (304) and If-Range, streaming it in bounded chunks so that memory does not
 * grow with the file.
 *
 * @module
 */
import { CORS_FILE_HEADERS } from "./cors.ts";
import { RangeNotSatisfiable } from "../errors/mod.ts";

/** What to serve. */
export interface FileToServe {
  path: string;
  /** A strong entity tag, without quotes. */
  etag: string;
  contentType: string;
  /** Suggested file name for `Content-Disposition`. */
  filename: string;
}

type ByteRange = { start: number; end: number };

/**
 * Parses a Range header for a file of `size` bytes. Returns undefined when the whole file should
 * be sent (no header, another unit, or several ranges, which RFC 9110 lets a server ignore) and
 * "unsatisfiable" for a range that lies outside the file.
 */
export function parseRange(
  header: string | null,
  size: number,
): ByteRange | "unsatisfiable" | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === "" && match[2] === "")) return undefined;
  if (match[1] === "") {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { start, end };
}

/**
 * The bytes `start..start+length` of an open file. The whole file is the file's own readable,
 * which Deno.serve streams without a round trip through JavaScript per chunk; a range is cut
 * from it after a seek.
 */
async function fileStream(
  file: Deno.FsFile,
  start: number,
  length: number,
  size: number,
): Promise<ReadableStream<Uint8Array>> {
  if (start === 0 && length === size) return file.readable;
  if (start > 0) await file.seek(start, Deno.SeekMode.Start);
  let remaining = length;
  return file.readable.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const part = chunk.byteLength > remaining ? chunk.subarray(0, remaining) : chunk;
        remaining -= part.byteLength;
        controller.enqueue(part);
        // Ends the response and cancels the file's readable, which closes the file.
        if (remaining === 0) controller.terminate();
      },
    }),
  );
}

function matchesEtag(header: string, etag: string): boolean {
  return header.split(",").some((tag) => {
    const trimmed = tag.trim().replace(/^W\//, "");
    return trimmed === "*" || trimmed === `"${etag}"`;
  });
}

/**
 * The response for a GET or HEAD of a file. The file is opened before the response is built, so
 * a missing file rejects with Deno.errors.NotFound (for the caller to turn into a 404), and a
 * file replaced or deleted meanwhile is still served whole from the open descriptor. A range
 * outside the file rejects with RangeNotSatisfiable (416, its Content-Range from the size).
 */
export async function fileResponse(request: Request, file: FileToServe): Promise<Response> {
  const opened = await openExactly(file.path);
  try {
    return await respond(request, file, opened, await opened.stat());
  } catch (error) {
    opened.close();
    throw error;
  }
}

/**
 * Opens `path` only if it is a regular file reached without any symlink: `path` must be its own
 * real path (callers give paths under a real root), and the file opened must be the one checked
 * (same device and inode), so that a link swapped in between is not followed. Anything else is
 * Deno.errors.NotFound, as if the file were not there: a planted link must not serve what it
 * points to.
 */
async function openExactly(path: string): Promise<Deno.FsFile> {
  const checked = await Deno.lstat(path);
  if (!checked.isFile || await Deno.realPath(path) !== path) {
    throw new Deno.errors.NotFound(`${path} is not a regular file of its own`);
  }
  const opened = await Deno.open(path, { read: true });
  const info = await opened.stat();
  if (info.ino !== checked.ino || info.dev !== checked.dev) {
    opened.close();
    throw new Deno.errors.NotFound(`${path} changed while it was opened`);
  }
  return opened;
}

async function respond(
  request: Request,
  file: FileToServe,
  opened: Deno.FsFile,
  info: Deno.FileInfo,
): Promise<Response> {
  const size = info.size;
  const lastModified = info.mtime ?? new Date(0);
  const headers = new Headers({
    ...CORS_FILE_HEADERS,
    "Accept-Ranges": "bytes",
    "Content-Type": file.contentType,
    "Content-Disposition": `attachment; filename="${file.filename}"`,
    "ETag": `"${file.etag}"`,
    "Last-Modified": lastModified.toUTCString(),
    "Cache-Control": "no-cache",
  });
  const ifNoneMatch = request.headers.get("if-none-match");
  if (ifNoneMatch && matchesEtag(ifNoneMatch, file.etag)) {
    opened.close();
    return new Response(null, { status: 304, headers });
  }
  const ifRange = request.headers.get("if-range");
  const rangeApplies = !ifRange || ifRange === `"${file.etag}"` ||
    (!ifRange.startsWith('"') && !ifRange.startsWith("W/") &&
      Date.parse(ifRange) >= Math.floor(lastModified.getTime() / 1000) * 1000);
  const range = rangeApplies ? parseRange(request.headers.get("range"), size) : undefined;
  if (range === "unsatisfiable") {
    // fileResponse closes the file.
    throw new RangeNotSatisfiable(`range not satisfiable: the file has ${size} bytes`, { size });
  }
  const { start, end } = range ?? { start: 0, end: size - 1 };
  const length = end - start + 1;
  headers.set("Content-Length", String(length));
  if (range) headers.set("Content-Range", `bytes ${start}-${end}/${size}`);
  const status = range ? 206 : 200;
  if (request.method === "HEAD" || length === 0) {
    opened.close();
    return new Response(null, { status, headers });
  }
  return new Response(await fileStream(opened, start, length, size), { status, headers });
}
