/**
 * A chat with one of the node's models: the answer streams in as it is generated, Stop ends it,
 * and each answer shows its figures (tokens, tokens per second, time to the first token). The
 * conversation lasts while the page is open (across its pages, not a reload).
 *
 * @module
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { type ChatTurn, type ModelEntry, streamChat, type Usage } from "./inference_api.ts";
import { messageOf } from "./node_api.ts";
import { Notice } from "./widgets.tsx";

/** A message of the conversation, and for an answer how it went. */
interface Turn extends ChatTurn {
  /** The model that answered. */
  model?: string;
  /** The model was not loaded when asked: the answer waits for its load first. */
  loads?: boolean;
  state?: "waiting" | "streaming" | "done" | "stopped" | "failed";
  usage?: Usage;
  finishReason?: string | null;
  error?: string;
}

/** What outlives the component while the page is open. */
const kept = { turns: [] as Turn[], model: "", maxTokens: "512" };

/** "12 tokens · 48.3 tokens/s · first token after 85 ms" */
function figures(turn: Turn): string {
  const usage = turn.usage!;
  const speed = usage.decode_token_per_second || usage.token_per_second || 0;
  return [
    `${usage.completion_tokens} tokens`,
    `${speed.toFixed(1)} tokens/s`,
    usage.ttft_ms === undefined ? "" : `first token after ${Math.round(usage.ttft_ms)} ms`,
    turn.finishReason === "length" ? "cut at the token limit" : "",
  ].filter(Boolean).join(" · ");
}

function TurnView(props: { turn: Turn }) {
  const { turn } = props;
  const mine = turn.role === "user";
  return (
    <div class={`turn ${turn.role}`} data-state={turn.state}>
      <p class="who">{mine ? "You" : turn.model}</p>
      <div class="text">
        {turn.content ||
          (turn.state === "waiting" && (
            <span class="muted">{turn.loads ? "Loading the model…" : "Thinking…"}</span>
          ))}
      </div>
      {turn.state === "done" && turn.usage && <p class="figures">{figures(turn)}</p>}
      {turn.state === "stopped" && <p class="figures">Stopped.</p>}
      {turn.state === "failed" && <p class="notice error">{turn.error}</p>}
    </div>
  );
}

/**
 * The chat box of the models page (with the API key entered); `models` are the runnable ones
 * (GET /models of inference).
 */
export function ChatBox(props: { models: ModelEntry[]; onAnswered(): void }) {
  const chatModels = props.models.filter((m) => m.info.kind === "llm" || m.info.kind === "vlm");
  // An answer cut off by leaving the page earlier is stopped.
  const [turns, setTurns] = useState<Turn[]>(() =>
    kept.turns.map((t) =>
      t.state === "waiting" || t.state === "streaming" ? { ...t, state: "stopped" } : t
    )
  );
  const [model, setModel] = useState(kept.model);
  const [maxTokens, setMaxTokens] = useState(kept.maxTokens);
  const [text, setText] = useState("");
  const stopper = useRef<AbortController | undefined>(undefined);
  const log = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  /** Whether the log shows its end: it then follows the answer as it grows. */
  const following = useRef(true);
  const generating = turns.some((t) => t.state === "waiting" || t.state === "streaming");
  const chosen = chatModels.find((m) => m.id === model) ??
    chatModels.find((m) => m.loaded) ?? chatModels[0];

  useEffect(() => {
    Object.assign(kept, { turns, model, maxTokens });
    const box = log.current;
    if (box && following.current) box.scrollTop = box.scrollHeight;
  }, [turns, model, maxTokens]);
  // A generation does not outlive the page that shows it.
  useEffect(() => () => stopper.current?.abort(), []);

  if (chatModels.length === 0) {
    return <Notice>No chat model yet: upload or download a GGUF model of kind llm.</Notice>;
  }

  /** Changes the answer being generated (the last turn). */
  const answer = (change: (turn: Turn) => Partial<Turn>) =>
    setTurns((all) => [...all.slice(0, -1), { ...all.at(-1)!, ...change(all.at(-1)!) }]);

  const send = async (event: Event) => {
    event.preventDefault();
    const content = text.trim();
    if (!content || generating || !chosen) return;
    const history: ChatTurn[] = [...turns, { role: "user" as const, content }]
      .filter((t) => t.state !== "failed")
      .map(({ role, content }) => ({ role, content }));
    setText("");
    input.current?.focus();
    setTurns((all) => [
      ...all,
      { role: "user", content },
      { role: "assistant", content: "", model: chosen.id, loads: !chosen.loaded, state: "waiting" },
    ]);
    following.current = true;
    const controller = new AbortController();
    stopper.current = controller;
    try {
      const limit = Number(maxTokens) || undefined;
      for await (const piece of streamChat(chosen.id, history, limit, controller.signal)) {
        if ("text" in piece) {
          answer((t) => ({ content: t.content + piece.text, state: "streaming" }));
        } else answer(() => ({ usage: piece.usage, finishReason: piece.finishReason }));
      }
      answer(() => ({ state: "done" }));
    } catch (error) {
      if (controller.signal.aborted) answer(() => ({ state: "stopped" }));
      else answer(() => ({ state: "failed", error: messageOf(error) }));
    } finally {
      stopper.current = undefined;
      props.onAnswered();
    }
  };

  const stop = () => {
    stopper.current?.abort();
    input.current?.focus();
  };

  return (
    <section class="chat" aria-labelledby="chat-title">
      <h3 id="chat-title">Chat</h3>
      <div
        ref={log}
        class="chat-log"
        role="log"
        aria-live="polite"
        aria-busy={generating}
        aria-label="Conversation"
        tabIndex={0}
        onScroll={(e) => {
          const box = e.currentTarget;
          following.current = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
        }}
      >
        {turns.length === 0
          ? <p class="muted">Pick a model, write a message: the answer appears here.</p>
          : turns.map((turn, at) => <TurnView key={at} turn={turn} />)}
      </div>
      <form class="chat-form" onSubmit={send} aria-label="Message to the model">
        <div class="chat-options">
          <label>
            Model
            <select value={chosen?.id} onChange={(e) => setModel(e.currentTarget.value)}>
              {chatModels.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.id} {m.loaded ? "(loaded)" : "(not loaded)"}
                </option>
              ))}
            </select>
          </label>
          <label>
            Max tokens
            <input
              type="number"
              min={1}
              inputMode="numeric"
              value={maxTokens}
              onInput={(e) => setMaxTokens(e.currentTarget.value)}
            />
          </label>
        </div>
        <label>
          Message
          <textarea
            ref={input}
            rows={3}
            value={text}
            aria-describedby="chat-keys"
            onInput={(e) => setText(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
          />
        </label>
        <p id="chat-keys" class="hint">Enter sends, Shift+Enter starts a new line.</p>
        <div class="chat-actions">
          <button type="submit" disabled={generating}>Send</button>
          {generating && <button type="button" class="danger" onClick={stop}>Stop</button>}
          <button
            type="button"
            disabled={generating || turns.length === 0}
            onClick={() => setTurns([])}
          >
            New conversation
          </button>
        </div>
      </form>
    </section>
  );
}
