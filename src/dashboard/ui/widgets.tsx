/**
 * Small pieces every page uses: polling, a progress bar, a confirmed action, a status line.
 *
 * @module
 */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { bytes } from "./format.ts";
import { messageOf } from "./node_api.ts";

/** What a polled source gave last. */
export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  reload(): void;
}

/** Calls `load` now and every `intervalMs` (and on reload()); keeps its last answer. */
export function usePolling<T>(load: () => Promise<T>, intervalMs: number, deps: unknown[] = []) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  useEffect(() => {
    let live = true;
    const run = () =>
      load().then(
        (value) => live && (setData(value), setError(undefined)),
        (reason) => live && setError(messageOf(reason)),
      );
    run();
    const timer = setInterval(run, intervalMs);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [tick, ...deps]);
  return { data, error, reload } satisfies Polled<T>;
}

/** A labelled bar with the bytes done; `total` unknown shows an indeterminate bar. */
export function ProgressBar(
  props: { label: string; done: number; total?: number; state?: string },
) {
  const percent = props.total ? Math.floor((100 * props.done) / props.total) : undefined;
  return (
    <div class="progress">
      <span>{props.label}</span>
      <progress
        aria-label={props.label}
        max={100}
        value={percent}
        data-percent={percent ?? ""}
      />
      <span class="figures">
        {percent === undefined
          ? bytes(props.done)
          : `${percent}% (${bytes(props.done)} of ${bytes(props.total!)})`}
        {props.state ? ` · ${props.state}` : ""}
      </span>
    </div>
  );
}

/** A button that asks "Really …?" in place before it acts. */
export function ConfirmButton(
  props: { label: string; question: string; onConfirm(): void; disabled?: boolean },
) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" disabled={props.disabled} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        class="danger"
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        Yes, {props.label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}

/** A status line read out by screen readers when it changes. */
export function Notice(props: { kind?: "error" | "info"; children: ComponentChildren }) {
  return (
    <p class={`notice ${props.kind ?? "info"}`} role={props.kind === "error" ? "alert" : "status"}>
      {props.children}
    </p>
  );
}

/** Shown where a page needs the API key. */
export function NeedsKey(props: { what: string }) {
  return <Notice>Enter the node's API key above to {props.what}.</Notice>;
}

/**
 * A table that scrolls sideways on a narrow screen. An empty column title is an actions column,
 * named for screen readers only.
 */
export function Table(props: { caption?: string; columns: string[]; children: ComponentChildren }) {
  return (
    <div class="scroll">
      <table>
        {props.caption && <caption>{props.caption}</caption>}
        <thead>
          <tr>
            {props.columns.map((title) => (
              <th scope="col" key={title}>
                {title || <span class="visually-hidden">Actions</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
