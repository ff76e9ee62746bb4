/**
 * The microservices: images, containers with their base paths and state, whether each answers,
 * and restart (a redeploy of the same image) or removal.
 *
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import type { components } from "../../../gen/mcm/types.ts";
import { answerText } from "./explain.ts";
import { bytes, when } from "./format.ts";
import { clients, messageOf, storedKey } from "./node_api.ts";
import { ConfirmButton, NeedsKey, Notice, Table, usePolling } from "./widgets.tsx";

type Container = components["schemas"]["Container"];
type Image = components["schemas"]["Image"];

async function loadDeployment(): Promise<{ images: Image[]; containers: Container[] }> {
  const { mcm } = clients();
  const [images, containers] = await Promise.all([
    mcm.GET("/mcm/v1/images"),
    mcm.GET("/mcm/v1/containers"),
  ]);
  if (!images.data) throw images.error;
  if (!containers.data) throw containers.error;
  return { images: images.data.data, containers: containers.data.data };
}

function basePath(container: Container): string {
  return container.env["MCM.BASE_API_PATH"] ?? "";
}

/** Whether the microservice answers at its base path: the status it gave, or why not. */
function Answers(props: { container: Container }) {
  const [answer, setAnswer] = useState({ text: "…", title: "" });
  useEffect(() => {
    if (props.container.state !== "started") return setAnswer({ text: "-", title: "" });
    fetch(`${basePath(props.container)}/`).then(
      (response) => {
        response.body?.cancel();
        setAnswer(answerText(response.status));
      },
      () => setAnswer(answerText(undefined)),
    );
  }, [props.container.id, props.container.created, props.container.state]);
  return <span title={answer.title || undefined}>{answer.text}</span>;
}

function ContainersTable(
  props: { containers: Container[]; onRestart(c: Container): void; onRemove(c: Container): void },
) {
  if (props.containers.length === 0) return <Notice>No microservice is deployed.</Notice>;
  return (
    <Table
      caption="Containers"
      columns={["Name", "Image", "Base path", "State", "Answers", "Restarts", "Deployed", ""]}
    >
      {props.containers.map((container) => (
        <tr key={container.id} data-container={container.name}>
          <th scope="row">{container.name}</th>
          <td>{container.image}</td>
          <td class="mono">
            <a href={`${basePath(container)}/`}>{basePath(container)}</a>
          </td>
          <td title={container.lastError}>{container.state}</td>
          <td>
            <Answers container={container} />
          </td>
          <td>{container.restarts}</td>
          <td>{when(container.created)}</td>
          <td class="actions">
            <button
              type="button"
              onClick={() => props.onRestart(container)}
            >
              Restart
            </button>
            <ConfirmButton
              label="Remove"
              question={`Remove ${container.name}? Its storage is kept.`}
              onConfirm={() => props.onRemove(container)}
            />
          </td>
        </tr>
      ))}
    </Table>
  );
}

function ImagesTable(props: { images: Image[] }) {
  if (props.images.length === 0) return <Notice>No image is uploaded.</Notice>;
  return (
    <Table caption="Images" columns={["Name", "Size", "Uploaded", "Containers", "Digest"]}>
      {props.images.map((image) => (
        <tr key={image.id}>
          <th scope="row">{image.name}</th>
          <td>{bytes(image.size)}</td>
          <td>{when(image.created * 1000)}</td>
          <td>{image.containers}</td>
          <td class="mono">{image.digest.slice(0, 19)}…</td>
        </tr>
      ))}
    </Table>
  );
}

/** The microservices page. */
export function MicroservicesPage() {
  const hasKey = Boolean(storedKey());
  const deployment = usePolling(
    () => hasKey ? loadDeployment() : Promise.resolve(undefined),
    5000,
    [hasKey],
  );
  const [problem, setProblem] = useState<string | undefined>();
  if (!hasKey) return <NeedsKey what="see and manage microservices" />;

  const restart = async (container: Container) => {
    setProblem(undefined);
    const { env } = container;
    const own = Object.fromEntries(
      Object.entries(env).filter(([key]) => key !== "MCM.WEBSOCKET_SUPPORT"),
    );
    const { error, response } = await clients().mcm.POST("/mcm/v1/containers", {
      body: { name: container.name, image: container.image, env: own },
    });
    if (!response.ok) setProblem(messageOf(error));
    deployment.reload();
  };
  const remove = async (container: Container) => {
    setProblem(undefined);
    const { error, response } = await clients().mcm.DELETE("/mcm/v1/containers/{id}", {
      params: { path: { id: container.id }, query: {} },
    });
    if (!response.ok) setProblem(messageOf(error));
    deployment.reload();
  };

  return (
    <section aria-labelledby="ms-title">
      <h2 id="ms-title">Microservices</h2>
      {deployment.error && <Notice kind="error">{deployment.error}</Notice>}
      {problem && <Notice kind="error">{problem}</Notice>}
      {deployment.data && (
        <>
          <ContainersTable
            containers={deployment.data.containers}
            onRestart={restart}
            onRemove={remove}
          />
          <ImagesTable images={deployment.data.images} />
        </>
      )}
    </section>
  );
}
