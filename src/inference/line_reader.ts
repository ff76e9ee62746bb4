/**
 * The lines of a child process's output, as they come (the engine's events, the installer's
 * progress).
 *
 * @module
 */

/** Calls `onLine` with each whole line of `stream` (a last line without its newline is dropped). */
export async function readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  let buffered = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffered += chunk;
    let end;
    while ((end = buffered.indexOf("\n")) >= 0) {
      onLine(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
    }
  }
}
