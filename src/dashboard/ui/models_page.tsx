/**
 * The models: the registry as a table with whether the engine has each loaded (and load or
 * unload), a chat with one of them, downloads from a URL and uploads from this computer with
 * live progress, and deletion with confirmation.
 *
 * @module
 */
import { useState } from "preact/hooks";
import type { components } from "../../../gen/store/types.ts";
import { ensureModel, pullModel } from "../../sdk/models.ts";
import { ChatBox } from "./chat_box.tsx";
import { bytes, parameters, when } from "./format.ts";
import { runnableModels } from "./inference_api.ts";
import { type Engine, LoadButton, loadState, useEngine } from "./model_loading.tsx";
import { clients, messageOf, storedKey, uploadModelFile } from "./node_api.ts";
import { ConfirmButton, NeedsKey, Notice, ProgressBar, Table, usePolling } from "./widgets.tsx";

type Model = components["schemas"]["Model"];
type Kind = components["schemas"]["Kind"];
const KINDS: Kind[] = ["llm", "vlm", "embed", "onnx"];

/** A transfer the page is following. */
interface Transfer {
  id: string;
  file: string;
  done: number;
  total?: number;
  state: "running" | "done" | "failed";
  message?: string;
}

async function loadModels(): Promise<Model[]> {
  const { data, error } = await clients().store.GET("/models", { params: { query: {} } });
  if (!data) throw error;
  return data.data;
}

function facts(model: Model): string {
  const info = model.ggufInfo;
  if (!info) return model.onnx ? "ONNX" : "";
  return [
    info.architecture,
    info.parameterCount && `${parameters(info.parameterCount)} params`,
    info.quantization,
    info.contextLength && `ctx ${info.contextLength}`,
  ].filter(Boolean).join(" · ");
}

function ModelsTable(props: { models: Model[]; engine: Engine; onDelete(id: string): void }) {
  if (props.models.length === 0) return <Notice>No models yet.</Notice>;
  const { engine } = props;
  return (
    <Table
      caption="Models on this node"
      columns={["ID", "Kind", "Version", "Size", "Ready", "Loaded", "GGUF", "Created", ""]}
    >
      {props.models.map((model) => (
        <tr key={model.id} data-model={model.id}>
          <th scope="row">{model.id}</th>
          <td>{model.kind}</td>
          <td>{model.version}</td>
          <td>{model.totalSize === undefined ? "-" : bytes(model.totalSize)}</td>
          <td>{model.readyToUse ? "yes" : "no"}</td>
          <td>{loadState(model.id, engine)}</td>
          <td>{facts(model)}</td>
          <td>{when(model.createdAt)}</td>
          <td>
            <div class="row-actions">
              <LoadButton id={model.id} engine={engine} />
              <ConfirmButton
                label="Delete"
                question={`Delete ${model.id} and its files?`}
                disabled={!storedKey()}
                onConfirm={() => props.onDelete(model.id)}
              />
            </div>
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** The fields both forms share: id, kind, version. */
function RecordFields(props: { prefix: string }) {
  return (
    <>
      <label>
        Model ID <input name="id" required pattern="[A-Za-z0-9._-]+" autocomplete="off" />
      </label>
      <label>
        Kind
        <select name="kind">
          {KINDS.map((kind) => <option key={kind} value={kind}>{kind}</option>)}
        </select>
      </label>
      <label>
        Version <input name="version" value="1.0.0" required id={`${props.prefix}-version`} />
      </label>
    </>
  );
}

function recordOf(form: HTMLFormElement) {
  const data = new FormData(form);
  return {
    id: String(data.get("id")),
    kind: String(data.get("kind")) as Kind,
    version: String(data.get("version")),
  };
}

/** The models page. */
export function ModelsPage() {
  const models = usePolling(loadModels, 5000);
  const runnable = usePolling(runnableModels, 5000);
  const [transfers, setTransfers] = useState<Transfer[]>([]);
  const [problem, setProblem] = useState<string | undefined>();
  const hasKey = Boolean(storedKey());

  const track = (transfer: Transfer) =>
    setTransfers((all) => [
      ...all.filter((t) => !(t.id === transfer.id && t.file === transfer.file)),
      transfer,
    ]);

  const download = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const record = recordOf(form);
    const url = String(new FormData(form).get("url"));
    const mmprojUrl = String(new FormData(form).get("mmproj") ?? "");
    setProblem(undefined);
    const files: Record<string, Transfer> = {};
    try {
      const body = { url, ...(mmprojUrl ? { mmprojUrl } : {}) };
      // pullModel removes the record it made when the node refuses the download or it fails.
      for await (const message of pullModel(clients().store, record, body)) {
        if (Object.keys(files).length === 0) models.reload(); // the new record, while it runs
        if ("done" in message) {
          for (const file of Object.values(files)) track({ ...file, state: "done" });
        } else {
          const [file, progress] = "mmproj" in message
            ? ["projector", message.mmproj]
            : ["model", message];
          files[file] = {
            id: record.id,
            file,
            done: progress.size,
            total: progress.totalSize,
            state: "running",
          };
          track(files[file]);
        }
      }
    } catch (error) {
      setProblem(messageOf(error));
      for (const file of Object.values(files)) track({ ...file, state: "failed" });
    }
    models.reload();
  };

  const upload = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const record = recordOf(form);
    const file = (form.elements.namedItem("file") as HTMLInputElement).files?.[0];
    if (!file) return;
    setProblem(undefined);
    const progress: Transfer = { id: record.id, file: "upload", done: 0, state: "running" };
    track(progress);
    try {
      await ensureModel(clients().store, record);
      await uploadModelFile(record.id, file, (done, total) => track({ ...progress, done, total }));
      track({ ...progress, done: file.size, total: file.size, state: "done" });
    } catch (error) {
      setProblem(messageOf(error));
      track({ ...progress, state: "failed" });
    }
    models.reload();
  };

  const remove = async (id: string) => {
    const { response, error } = await clients().store.DELETE("/models/{id}", {
      params: { path: { id } },
    });
    if (!response.ok) setProblem(messageOf(error));
    models.reload();
  };

  const engine = useEngine(runnable, setProblem);

  return (
    <section aria-labelledby="models-title">
      <h2 id="models-title">Models</h2>
      {models.error && <Notice kind="error">{models.error}</Notice>}
      {models.data && <ModelsTable models={models.data} engine={engine} onDelete={remove} />}
      {problem && <Notice kind="error">{problem}</Notice>}
      {transfers.length > 0 && (
        <div class="transfers" aria-label="Transfers">
          {transfers.map((t) => (
            <ProgressBar
              key={`${t.id}-${t.file}`}
              label={`${t.id} ${t.file}`}
              done={t.done}
              total={t.total}
              state={t.state}
            />
          ))}
        </div>
      )}
      {runnable.error && <Notice kind="error">{runnable.error}</Notice>}
      {!hasKey && <NeedsKey what="chat with a model, or to download, upload or delete models" />}
      {hasKey && runnable.data && <ChatBox models={runnable.data} onAnswered={runnable.reload} />}
      {runnable.data === null && <Notice>Inference is turned off on this node: no chat.</Notice>}
      {hasKey && (
        <div class="forms">
          <form onSubmit={download} aria-labelledby="download-title">
            <h3 id="download-title">Download from a URL</h3>
            <RecordFields prefix="download" />
            <label>
              File URL <input name="url" type="url" required placeholder="https://…/model.gguf" />
            </label>
            <label>
              Projector URL (vlm, optional) <input name="mmproj" type="url" />
            </label>
            <button type="submit">Download</button>
          </form>
          <form onSubmit={upload} aria-labelledby="upload-title">
            <h3 id="upload-title">Upload a file</h3>
            <RecordFields prefix="upload" />
            <label>
              File <input name="file" type="file" required accept=".gguf,.onnx" />
            </label>
            <button type="submit">Upload</button>
          </form>
        </div>
      )}
    </section>
  );
}
