/**
 * A model load's stream as a client reads it: while the node installs the inference engine
 * first, its progress messages are `<|installing_engine|> <words><br />` (the node writes them
 * with src/inference/install_words.ts), before the load's own `<|loading_model|> N%<br />`.
 *
 * @module
 */

const INSTALLING_ENGINE = /^<\|installing_engine\|> (.*?)(?:<br \/>)?$/;

/**
 * The words of an engine install's progress message ("installing the cuda engine 48/143 MB"),
 * or undefined when `progress` is not one.
 */
export function installingEngineOf(progress: unknown): string | undefined {
  return typeof progress === "string" ? INSTALLING_ENGINE.exec(progress)?.[1] : undefined;
}
