/**
 * The kind of a record that a push or pull makes, read from the model's file: the first bytes
 * of its GGUF header (a local file's, or a URL's through one Range request), the names, and
 * `--kind`, which overrides them: one rule for `models pull` and `models push`, the one
 * `edgenode pull NAME` follows too (model_names.ts kindOfDownload).
 *
 * @module
 */
import { embedsByHead, type GgufHead, HEAD_BYTES, readGgufHead, readUpTo } from "./gguf_head.ts";
import { type Kind, kindNeeded } from "./model_flags.ts";
import { openUserFile } from "./user_files.ts";

/** What is known of a model's file when its record is made. */
export interface FileFacts {
  /** Where the file is (a path or URL), for the messages. */
  source: string;
  /** The file's name, and the projector's when there is one. */
  names: string[];
  /** A projector comes with it (`--mmproj`). */
  hasProjector: boolean;
  /** Its GGUF head; undefined when it is not GGUF; "unread" when it could not be fetched. */
  head: GgufHead | undefined | "unread";
}

/**
 * The kind of a record made now by `models pull` or `models push`: `--kind` when given, else vlm with a projector, embed when the names say "embed" or the
 * GGUF head does (an encoder, or pooling), else llm. A file that is not GGUF (an ONNX model)
 * asks for --kind; one whose head could not be fetched is named by its names, and the node's
 * download says what is wrong with the source.
 */
export function recordKind(given: Kind | undefined, file: FileFacts): Kind {
  if (given !== undefined) return given;
  if (file.hasProjector) return "vlm";
  if (file.head === undefined) throw kindNeeded(`${file.source} is not a GGUF file`);
  const byHead = file.head !== "unread" && embedsByHead(file.head);
  return byHead || file.names.some((name) => /embed/i.test(name)) ? "embed" : "llm";
}

/** The GGUF head of the file at `path` (undefined when it is not GGUF). */
export async function fileHead(path: string): Promise<GgufHead | undefined> {
  const file = await openUserFile(path);
  return readGgufHead((await readUpTo(file.readable, HEAD_BYTES)).bytes);
}
