/**
 * The mesh: the nodes of the local link network with the supernode marked, and the account's
 * nodes and those nearby when the node holds an account token.
 *
 * @module
 */
import { STORE_TOKEN_COMMAND, tokenProblem } from "./explain.ts";
import { clients, messageOf, storedKey } from "./node_api.ts";
import { NeedsKey, Notice, Table, usePolling } from "./widgets.tsx";

/** A node as the insight service lists it (the fields the page shows). */
interface ListedNode {
  id: string;
  name?: string;
  accountId?: string;
  addresses?: { type?: string; url?: { href?: string } }[];
}

type Listing = { nodes: ListedNode[] } | { unavailable: string };

async function listing(type: "linkLocal" | "account" | "proximity"): Promise<Listing> {
  const { data, error } = await clients().insight.GET("/nodes", { params: { query: { type } } });
  return data ? { nodes: data.data as ListedNode[] } : { unavailable: messageOf(error) };
}

async function loadMesh() {
  const { data } = await clients().insight.GET("/info", {
    params: { query: { types: "self,supernode" } },
  });
  const info = data?.data as { self?: ListedNode; supernode?: ListedNode } | undefined;
  const [linkLocal, account, proximity] = await Promise.all([
    listing("linkLocal"),
    listing("account"),
    listing("proximity"),
  ]);
  return { self: info?.self?.id, supernode: info?.supernode?.id, linkLocal, account, proximity };
}

function NodesTable(
  props: { title: string; listing: Listing; self?: string; supernode?: string },
) {
  if ("unavailable" in props.listing) {
    const tokenMissing = tokenProblem(props.listing.unavailable);
    return (
      <section class="nodes">
        <h3>{props.title}</h3>
        {tokenMissing
          ? (
            <Notice>
              {tokenMissing}. Store one on the node's machine with{" "}
              <code data-testid="token-command">{STORE_TOKEN_COMMAND}</code>.
            </Notice>
          )
          : <Notice>{props.listing.unavailable}</Notice>}
      </section>
    );
  }
  return (
    <section class="nodes">
      <h3>{props.title}</h3>
      {props.listing.nodes.length === 0
        ? <Notice>None.</Notice>
        : (
          <Table columns={["Name", "Node", "Account", "Address", "Role"]}>
            {props.listing.nodes.map((node) => (
              <tr key={node.id} data-node={node.id}>
                <th scope="row">{node.name ?? ""}</th>
                <td class="mono">{node.id.slice(0, 16)}…</td>
                <td>{node.accountId || "-"}</td>
                <td class="mono">{node.addresses?.[0]?.url?.href ?? "-"}</td>
                <td>
                  {[
                    node.id === props.supernode ? "supernode" : "",
                    node.id === props.self ? "this node" : "",
                  ].filter(Boolean).join(", ")}
                </td>
              </tr>
            ))}
          </Table>
        )}
    </section>
  );
}

/** The mesh page. */
export function MeshPage() {
  const hasKey = Boolean(storedKey());
  const mesh = usePolling(() => hasKey ? loadMesh() : Promise.resolve(undefined), 5000, [hasKey]);
  if (!hasKey) return <NeedsKey what="see the nodes around this one" />;
  if (mesh.error) return <Notice kind="error">{mesh.error}</Notice>;
  if (!mesh.data) return <Notice>Loading…</Notice>;
  const { self, supernode } = mesh.data;
  return (
    <section aria-labelledby="mesh-title">
      <h2 id="mesh-title">Mesh</h2>
      <NodesTable
        title="Local link network"
        listing={mesh.data.linkLocal}
        self={self}
        supernode={supernode}
      />
      <NodesTable title="Account" listing={mesh.data.account} self={self} />
      <NodesTable title="Nearby" listing={mesh.data.proximity} self={self} />
    </section>
  );
}
