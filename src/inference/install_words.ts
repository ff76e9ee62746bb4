/**
 * An engine install's progress (install_progress.ts) in words, as the node's log, a model load's
 * event stream (`{ progress: "<|installing_engine|> installing the cuda engine 48/143 MB<br />" }`,
 * load_messages.ts) and the dashboard's overview show it. No imports, no Deno: the dashboard's
 * page bundles it. Clients read the stream's words back with the SDK's `installingEngineOf`
 * (src/sdk/load_progress.ts).
 *
 * @module
 */

/** How far an install is. */
export interface InstallProgress {
  /** The backend being installed ("cuda", "vulkan", "metal", "cpu"). */
  backend: string;
  /** "download": npm fills the folder; "build": llama.cpp compiles from its source. */
  stage: "download" | "build";
  /** Bytes landed (download) or steps done (build). */
  done: number;
  /** Bytes expected or steps in all, when known. */
  total?: number;
}

const MB = 1_000_000;

/**
 * `progress` in words: "installing the cuda engine 48/143 MB", "building the cuda engine from
 * source, step 12/345" (make's percent reads as step 37/100).
 */
export function describeInstall({ backend, stage, done, total }: InstallProgress): string {
  if (stage === "build") {
    // Never a percent: clients read a load's percent from the same stream (load_messages.ts).
    return `building the ${backend} engine from source, step ${done}${total ? `/${total}` : ""}`;
  }
  const mb = (bytes: number) => Math.round(bytes / MB);
  const landed = total ? `${Math.min(mb(done), mb(total))}/${mb(total)}` : `${mb(done)}`;
  return `installing the ${backend} engine ${landed} MB`;
}

/** A load stream's progress text for `progress`: `<|installing_engine|> <words><br />`. */
export function installingEngineProgress(progress: InstallProgress): string {
  return `<|installing_engine|> ${describeInstall(progress)}<br />`;
}
