/**
 * The dashboard in a real browser (Chromium through playwright-core) against real nodes: every
 * page, a download from a local file server watched to 100%, an upload, a deletion, a container
 * and another node listed, on a desktop and a phone-sized screen. Screenshots go to
 * test-artifacts/dashboard/.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import axe from "axe-core";
import type { Page } from "playwright-core";
import { dashboardClient } from "../src/sdk/clients.ts";
import { ARTIFACTS, chromiumPath, launchBrowser } from "./helpers/browser.ts";
import { startFileServer } from "../testing/file_server.ts";
import { deployExample, mcm } from "../testing/mcm.ts";
import { nodeIdOf, randomMdnsPort, startMeshNode, supernodeId } from "../testing/mesh.ts";
import { ggufBytes, startTestNode, waitFor } from "../testing/node.ts";

const SHOTS = `${ARTIFACTS}dashboard/`;

/** Runs axe-core in the page; the rule violations of serious or critical impact. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axe.source });
  const results = await page.evaluate("axe.run(document)") as {
    violations: { id: string; impact: string; help: string; nodes: unknown[] }[];
  };
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}, ${v.nodes.length}×): ${v.help}`);
}

/** The percentages a progress bar showed until it reached 100 and its transfer was done. */
async function watchBar(page: Page, label: string): Promise<number[]> {
  const seen: number[] = [];
  const bar = page.getByRole("progressbar", { name: label });
  await waitFor(
    async () => {
      const percent = await bar.getAttribute("data-percent", { timeout: 500 }).catch(() => null);
      if (percent) seen.push(Number(percent));
      const figures = await bar.locator("xpath=following-sibling::span").textContent().catch(() =>
        ""
      );
      return seen.at(-1) === 100 && / · done$/.test(figures ?? "");
    },
    `${label} to reach 100%`,
    30_000,
  );
  return seen;
}

Deno.test("the dashboard in a browser: overview, models, microservices, mesh", async (t) => {
  const chromium = await chromiumPath();
  if ("missing" in chromium) {
    await t.step(`skipped: ${chromium.missing}`, () => {});
    return;
  }
  await Deno.mkdir(SHOTS, { recursive: true });
  const port = randomMdnsPort();
  await using node = await startMeshNode(port, { name: "den" });
  await using other = await startMeshNode(port, { name: "attic" });
  await using files = startFileServer();
  const gguf = ggufBytes(1_500_000);
  const url = files.serve("/pulled.gguf", gguf, { bytesPerSecond: 600_000 });
  await deployExample(node, "hello-mim", "hello");
  const browser = await launchBrowser(chromium.path);
  try {
    // bypassCSP: only so that the test can inject axe-core; the page itself runs under its CSP.
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      bypassCSP: true,
    });
    const page = await context.newPage();
    const audits: string[] = [];
    const audit = async (name: string) => {
      for (const problem of await accessibilityProblems(page)) audits.push(`${name}: ${problem}`);
    };

    await t.step("overview: who the node is, without a key", async () => {
      await page.goto(`${node.url}/`);
      await page.getByTestId("node-id").waitFor();
      assert.equal(await page.getByTestId("node-id").textContent(), await nodeIdOf(node));
      assert.match(await page.locator("main").textContent() ?? "", /den[\s\S]*free of/);
      assert.equal(await page.title(), "Overview · edgenode");
      // No GPU on a test machine: the CPU, and why (or still detecting at the first look).
      assert.match(await page.getByTestId("compute").textContent() ?? "", /^(cpu|detecting)/);
      // The disk bar is coloured by how full the disk is: green below three quarters.
      const meter = page.getByRole("meter", { name: "disk used" });
      assert.equal(await meter.getAttribute("optimum"), "0");
      assert.ok(Number(await meter.getAttribute("low")) > 0);
      // Where the API key is, before one is asked for.
      assert.match(
        await page.getByTestId("key-hint").textContent() ?? "",
        /~\/\.edgenode\/config\.json/,
      );
      await page.screenshot({ path: `${SHOTS}overview.png`, fullPage: true });
      await audit("overview");
    });

    await t.step("the key is entered once and kept for the tab", async () => {
      await page.getByRole("link", { name: "Models" }).click();
      await page.getByText("Enter the node's API key").waitFor();
      await page.getByLabel("API key").fill(node.apiKey);
      await page.getByRole("button", { name: "Use key" }).click();
      await page.getByText("API key entered").waitFor();
      assert.equal(
        await page.evaluate(() => sessionStorage.getItem("edgenode.apiKey")),
        node.apiKey,
      );
    });

    await t.step("models: a download from a URL, watched to 100%", async () => {
      const form = page.getByRole("form", { name: "Download from a URL" });
      await form.getByLabel("Model ID").fill("pulled");
      await form.getByLabel("Kind").selectOption("llm");
      await form.getByLabel("File URL").fill(url);
      await form.getByRole("button", { name: "Download" }).click();
      const seen = await watchBar(page, "pulled model");
      assert.ok(seen.some((percent) => percent > 0 && percent < 100), `seen: ${seen}`);
      const row = page.locator('tr[data-model="pulled"]');
      await waitFor(async () => (await row.textContent())?.includes("yes") ?? false, "ready");
      await page.screenshot({ path: `${SHOTS}models.png`, fullPage: true });
      await audit("models");
    });

    await t.step("models: a download that fails says why and leaves no record", async () => {
      const form = page.getByRole("form", { name: "Download from a URL" });
      await form.getByLabel("Model ID").fill("refused");
      await form.getByLabel("Kind").selectOption("llm");
      await form.getByLabel("File URL").fill(`${files.url}/missing.gguf`);
      await form.getByRole("button", { name: "Download" }).click();
      await page.getByText(/the source answered 404/).waitFor();
      const { response } = await node.store.GET("/models/{id}", {
        params: { path: { id: "refused" }, query: {} },
      });
      assert.equal(response.status, 404, "the record made for the download is gone again");
    });

    await t.step("models: an upload from this computer", async () => {
      const form = page.getByRole("form", { name: "Upload a file" });
      await form.getByLabel("Model ID").fill("uploaded");
      await form.getByLabel("File", { exact: true }).setInputFiles({
        name: "uploaded.gguf",
        mimeType: "application/octet-stream",
        buffer: Buffer.from(ggufBytes(800_000, 2)),
      });
      await form.getByRole("button", { name: "Upload" }).click();
      await watchBar(page, "uploaded upload");
      const { data } = await node.store.GET("/models/{id}", {
        params: { path: { id: "uploaded" }, query: {} },
        parseAs: "json",
      });
      assert.equal((data as { readyToUse?: boolean })?.readyToUse, true);
    });

    await t.step("models: deletion asks first", async () => {
      const row = page.locator('tr[data-model="uploaded"]');
      await row.getByRole("button", { name: "Delete" }).click();
      await row.getByRole("button", { name: "Cancel" }).click();
      await row.getByRole("button", { name: "Delete" }).click();
      await row.getByRole("button", { name: "Yes, delete" }).click();
      await row.waitFor({ state: "detached" });
      const { response } = await node.store.GET("/models/{id}", {
        params: { path: { id: "uploaded" }, query: {} },
      });
      assert.equal(response.status, 404);
    });

    await t.step("microservices: the container runs and answers", async () => {
      await page.getByRole("link", { name: "Microservices" }).click();
      const row = page.locator('tr[data-container="hello"]');
      await waitFor(
        async () => /started\s*yes \(\d+/.test(await row.textContent() ?? ""),
        "the container to answer",
      );
      // A 404 at its base path says that it runs and what the status means.
      assert.match(await row.textContent() ?? "", /yes \((\d+\)|404, nothing at its base path\))/);
      const link = row.getByRole("link");
      assert.match(await link.getAttribute("href") ?? "", /^\/[0-9a-f-]{36}\/hello\/$/);
      await page.screenshot({ path: `${SHOTS}microservices.png`, fullPage: true });
      await audit("microservices");
    });

    await t.step("microservices: restart redeploys, remove asks first", async () => {
      const row = page.locator('tr[data-container="hello"]');
      const before = (await mcm(node, "/containers/api-hello").then((r) => r.json())).created;
      await row.getByRole("button", { name: "Restart" }).click();
      await waitFor(async () => {
        const now = await mcm(node, "/containers/api-hello").then((r) => r.json());
        return now.created > before && now.state === "started";
      }, "the redeploy");
      await row.getByRole("button", { name: "Remove" }).click();
      await row.getByRole("button", { name: "Yes, remove" }).click();
      await row.waitFor({ state: "detached" });
      const gone = await mcm(node, "/containers/api-hello");
      await gone.body?.cancel();
      assert.equal(gone.status, 404);
    });

    await t.step("mesh: the other node, and the supernode marked", async () => {
      await page.getByRole("link", { name: "Mesh" }).click();
      const otherId = await nodeIdOf(other);
      const row = page.locator(`tr[data-node="${otherId}"]`);
      await row.waitFor({ timeout: 20_000 });
      assert.match(await row.textContent() ?? "", /attic/);
      const supernode = await supernodeId(node);
      assert.match(
        await page.locator(`tr[data-node="${supernode}"]`).textContent() ?? "",
        /supernode/,
      );
      // Without an account token: the command that stores one, not the API's PUT /token.
      await page.getByTestId("token-command").first().waitFor();
      assert.equal(
        await page.getByTestId("token-command").first().textContent(),
        "edgenode account-token --token-file FILE",
      );
      assert.doesNotMatch(await page.locator("main").textContent() ?? "", /PUT \/token/);
      await page.screenshot({ path: `${SHOTS}mesh.png`, fullPage: true });
      await audit("mesh");
      assert.deepEqual(audits, [], "axe-core finds no serious or critical problem");
    });

    await t.step("keyboard and a phone-sized screen", async () => {
      await page.keyboard.press("Tab");
      await page.getByRole("link", { name: "Overview" }).focus();
      await page.keyboard.press("Tab");
      await page.keyboard.press("Enter");
      await page.waitForURL(/#\/models$/);
      const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
      await phone.goto(`${node.url}/#/models`);
      await phone.locator('tr[data-model="pulled"]').waitFor();
      // Runs in the page, where the DOM's globals are.
      const overflow = await phone.evaluate(
        "document.documentElement.scrollWidth - innerWidth",
      ) as number;
      await phone.screenshot({ path: `${SHOTS}phone-models.png`, fullPage: true });
      assert.ok(overflow <= 0, `the page is ${overflow} px wider than the screen`);
      await phone.close();
    });
  } finally {
    await browser.close();
  }
});

Deno.test("the page's headers, cached assets, and the dashboard turned off", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } },
  });
  const page = await fetch(`${node.url}/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
  assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
  assert.equal(page.headers.get("x-content-type-options"), "nosniff");
  assert.match(await page.text(), /<script type="module" src="\/dashboard\/assets\/app.js">/);
  const script = await fetch(`${node.url}/dashboard/assets/app.js`);
  const etag = script.headers.get("etag")!;
  assert.match(script.headers.get("content-type") ?? "", /^text\/javascript/);
  assert.equal(script.headers.get("content-encoding"), "gzip", "fetch accepts gzip");
  assert.ok((await script.text()).length > 1000);
  const again = await fetch(`${node.url}/dashboard/assets/app.js`, {
    headers: { "If-None-Match": etag },
  });
  assert.equal(again.status, 304);
  await again.body?.cancel();
  const missing = await fetch(`${node.url}/dashboard/assets/index.html`);
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  const { data: status } = await dashboardClient({ url: node.url }).GET("/dashboard/v1/status");
  assert.equal(status?.models.count, 0);
  assert.ok((status?.disk.totalBytes ?? 0) > 0);

  await using off = await startTestNode({
    config: {
      apiKey: "a-test-key-of-enough-length",
      discovery: { mdns: false },
      dashboard: { enabled: false },
    },
  });
  for (const path of ["/", "/dashboard/assets/app.js", "/dashboard/v1/status"]) {
    const response = await fetch(`${off.url}${path}`);
    assert.equal(response.status, 404, path);
    await response.body?.cancel();
  }
  await using moved = await startTestNode({
    config: {
      apiKey: "a-test-key-of-enough-length",
      discovery: { mdns: false },
      dashboard: { path: "/ui" },
    },
  });
  assert.equal(await fetch(`${moved.url}/ui`).then((r) => (r.body?.cancel(), r.status)), 200);
  assert.equal(await fetch(`${moved.url}/`).then((r) => (r.body?.cancel(), r.status)), 404);
});
