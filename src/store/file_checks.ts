/**
 * Checks made before any byte moves (a download request) and before a written file is put in
 * place (its hash and header).
 *
 * @module
 */
import type { DownloadModelRequest, Kind } from "../../gen/store/validators.ts";
import { Invalid } from "../errors/mod.ts";
import { formatOf, headerProblem } from "./model_format.ts";
import type { FileRole, WrittenFile } from "./model_files.ts";

/** Temporary files to put in place together. */
export type WrittenFiles = Partial<Record<FileRole, WrittenFile>>;

/** Throws 400 when a download request does not fit the model or the node's settings. */
export function checkDownloadRequest(
  record: { id: string; kind: Kind },
  request: DownloadModelRequest,
  downloadHosts: string[] | undefined,
): void {
  const { id, kind } = record;
  for (const url of [request.url, request.mmprojUrl]) {
    if (url !== undefined) checkSourceUrl(url, downloadHosts);
  }
  if (kind === "vlm" && request.mmprojUrl === undefined) {
    throw new Invalid(`model '${id}' is a vlm: give 'mmprojUrl', its projector file`);
  }
  if (kind !== "vlm" && request.mmprojUrl !== undefined) {
    throw new Invalid(`'mmprojUrl' is only for kind vlm; model '${id}' is ${kind}`);
  }
  if (request.mmprojSha256 !== undefined && request.mmprojUrl === undefined) {
    throw new Invalid("'mmprojSha256' needs 'mmprojUrl'");
  }
}

function checkSourceUrl(text: string, downloadHosts: string[] | undefined): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Invalid(`'${text}' is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Invalid(`'${text}' is not an http or https URL`);
  }
  if (downloadHosts && !downloadHosts.includes(url.host) && !downloadHosts.includes(url.hostname)) {
    throw new Invalid(
      `downloads may come only from ${
        downloadHosts.join(", ")
      } (downloadHosts); not from ${url.host}`,
    );
  }
}

/** Throws 400 when a written file has the wrong hash or is not a file of its format. */
export function verifyWritten(
  kind: Kind,
  written: WrittenFiles,
  expectedSha256: Partial<Record<FileRole, string>>,
  transfer: "upload" | "download",
): void {
  for (const [role, file] of Object.entries(written) as [FileRole, WrittenFile][]) {
    const expected = expectedSha256[role]?.toLowerCase();
    if (expected && file.sha256 !== expected) {
      const what = role === "mmproj" ? "projector file" : transfer;
      throw new Invalid(`sha256 mismatch: expected ${expected}, the ${what} has ${file.sha256}`);
    }
    const problem = headerProblem(
      role === "mmproj" ? "gguf" : formatOf(kind),
      file.head,
      file.size,
    );
    if (problem) {
      throw new Invalid(
        `${role === "mmproj" ? "projector: " : ""}${problem}; the model's old state is unchanged`,
      );
    }
  }
}
