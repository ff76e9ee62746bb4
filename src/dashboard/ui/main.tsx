/**
 * The node's dashboard (spec/dashboard.yaml): four pages behind hash links, and the API key
 * entered once per tab. Bundled into bundles/dashboard_assets.ts by `deno task gen`.
 *
 * @module
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { MeshPage } from "./mesh_page.tsx";
import { MicroservicesPage } from "./microservices_page.tsx";
import { ModelsPage } from "./models_page.tsx";
import { DEFAULT_CONFIG_PATH } from "./explain.ts";
import { storedKey, storeKey } from "./node_api.ts";
import { OverviewPage } from "./overview_page.tsx";

const PAGES = [
  { hash: "#/", title: "Overview", page: OverviewPage },
  { hash: "#/models", title: "Models", page: ModelsPage },
  { hash: "#/microservices", title: "Microservices", page: MicroservicesPage },
  { hash: "#/mesh", title: "Mesh", page: MeshPage },
];

function useHash(): string {
  const [hash, setHash] = useState(location.hash || "#/");
  useEffect(() => {
    const changed = () => setHash(location.hash || "#/");
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash;
}

/** The key form, or that a key is kept and how to forget it. */
function KeyPanel(props: { hasKey: boolean; onChange(): void }) {
  if (props.hasKey) {
    return (
      <p class="key">
        API key entered (kept in this tab only).{" "}
        <button
          type="button"
          onClick={() => {
            storeKey(undefined);
            props.onChange();
          }}
        >
          Forget key
        </button>
      </p>
    );
  }
  return (
    <form
      class="key"
      onSubmit={(event) => {
        event.preventDefault();
        const input = (event.currentTarget as HTMLFormElement).elements.namedItem("key");
        storeKey((input as HTMLInputElement).value.trim() || undefined);
        props.onChange();
      }}
    >
      <label>
        API key <input name="key" type="password" autocomplete="off" required />
      </label>
      <button type="submit">Use key</button>
      <small class="key-hint" data-testid="key-hint">
        It is <code>apiKey</code> in the node's config file, <code>{DEFAULT_CONFIG_PATH}</code> (or
        {" "}
        <code>config.json</code> in its <code>--data-dir</code>).
      </small>
    </form>
  );
}

function App() {
  const hash = useHash();
  const [keyVersion, setKeyVersion] = useState(0);
  const current = PAGES.find((page) => page.hash === hash) ?? PAGES[0];
  const Page = current.page;
  useEffect(() => {
    document.title = `${current.title} · edgenode`;
  }, [current]);
  return (
    <>
      <header>
        <h1>edgenode</h1>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map((page) => (
              <li key={page.hash}>
                <a href={page.hash} aria-current={page === current ? "page" : undefined}>
                  {page.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <KeyPanel hasKey={Boolean(storedKey())} onChange={() => setKeyVersion((n) => n + 1)} />
      </header>
      <main key={`${current.hash}-${keyVersion}`}>
        <Page />
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
