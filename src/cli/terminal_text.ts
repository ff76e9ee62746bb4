/**
 * Text from a node made safe to print on a terminal. The node escapes what its containers log
 * (src/mcm/runtime/container_log.ts), but the CLI may talk to any node, an old or a hostile one:
 * what it prints must not move the cursor, rewrite lines or set the window's title.
 *
 * @module
 */

/** C0 and C1 controls (but tab), DEL, line and paragraph separators, bidi overrides. */
// deno-lint-ignore no-control-regex
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r" };

/** `text` on one line, its control characters written as escapes (`\n`, `\u001b`). */
export function terminalSafe(text: string): string {
  return text.replace(
    UNSAFE,
    (c) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
