/**
 * The dashboard's chat box in a real browser (Chromium through playwright-core) against a node
 * running the tiny llama model on the real engine: load and unload from the models table, an
 * answer streamed in with its figures, Enter and Shift+Enter, Stop in the middle of an answer,
 * the conversation kept across the dashboard's pages, and axe-core. Screenshots go to
 * test-artifacts/dashboard/.
 */
import assert from "node:assert/strict";
import axe from "axe-core";
import type { Page } from "playwright-core";
import { ARTIFACTS, chromiumPath, launchBrowser } from "./helpers/browser.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { ggufBytes, startTestNode, waitFor } from "../testing/node.ts";
import { readyModel } from "./helpers/store.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const SHOTS = `${ARTIFACTS}dashboard/`;

/** The rule violations axe-core finds in the page, of serious or critical impact. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axe.source });
  const results = await page.evaluate("axe.run(document)") as {
    violations: { id: string; impact: string; help: string; nodes: unknown[] }[];
  };
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}, ${v.nodes.length}×): ${v.help}`);
}

Deno.test("the dashboard's chat box: a streamed answer, its figures, Stop", async (t) => {
  const chromium = await chromiumPath();
  if ("missing" in chromium) {
    await t.step(`skipped: ${chromium.missing}`, () => {});
    return;
  }
  await Deno.mkdir(SHOTS, { recursive: true });
  await ensureTestEngine();
  await using node = await startTestNode({
    config: {
      apiKey: "a-dashboard-chat-test-key-0123456789",
      discovery: { mdns: false },
      inference: { threads: 1 },
    },
  });
  // A context of 4096 tokens, and EOS never sampled: an answer runs to its max tokens.
  await readyModel(node, "tiny", tinyLlamaGguf({ contextLength: 4096 }));
  // A GGUF header and no tensors: listed as ready, but the engine cannot load it.
  await readyModel(node, "hollow", ggufBytes(1000));
  const browser = await launchBrowser(chromium.path);
  try {
    // bypassCSP: only so that the test can inject axe-core; the page itself runs under its CSP.
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      bypassCSP: true,
    });
    const page = await context.newPage();
    const row = page.locator('tr[data-model="tiny"]');
    const form = page.getByRole("form", { name: "Message to the model" });
    const message = form.getByRole("textbox", { name: "Message" });
    const log = page.getByRole("log", { name: "Conversation" });
    const answers = log.locator(".turn.assistant");

    await t.step("the page holds no key; the chat needs the one entered", async () => {
      for (const path of ["/", "/dashboard/assets/app.js"]) {
        const body = await fetch(`${node.url}${path}`).then((r) => r.text());
        assert.ok(!body.includes(node.apiKey), path);
      }
      await page.goto(`${node.url}/#/models`);
      await page.getByText("Enter the node's API key above to chat with a model").waitFor();
      assert.equal(await form.count(), 0);
      await page.getByLabel("API key").fill(node.apiKey);
      await page.getByRole("button", { name: "Use key" }).click();
      await form.waitFor();
    });

    await t.step("the table shows whether the model is loaded; Load and Unload", async () => {
      const loaded = row.locator("td").nth(4);
      await waitFor(async () => await loaded.textContent() === "no", "tiny: not loaded");
      await row.getByRole("button", { name: "Load", exact: true }).click();
      await waitFor(async () => await loaded.textContent() === "yes", "tiny: loaded", 60_000);
      await row.getByRole("button", { name: "Unload" }).click();
      await waitFor(async () => await loaded.textContent() === "no", "tiny: unloaded");
    });

    await t.step("an answer streams in, with its figures", async () => {
      assert.equal(await log.getAttribute("aria-live"), "polite");
      const picker = form.getByRole("combobox", { name: /^Model/ });
      assert.deepEqual(await picker.locator("option").allTextContents(), [
        "tiny (not loaded)",
        "hollow (not loaded)",
      ]);
      assert.equal(await picker.inputValue(), "tiny", "the first is chosen");
      await form.getByLabel("Max tokens").fill("40");
      await message.fill("Hello there");
      await message.press("Enter");
      const answer = answers.last();
      await answer.and(page.locator('[data-state="done"]')).waitFor({ timeout: 60_000 });
      assert.equal(await message.inputValue(), "", "the sent message left the box");
      assert.ok((await answer.locator(".text").textContent())!.trim().length > 0);
      const figures = await answer.locator(".figures").textContent() ?? "";
      assert.match(
        figures,
        /^40 tokens · \d+(\.\d)? tokens\/s · first token after \d+ ms · cut at the token limit$/,
      );
      assert.ok(Number(/([\d.]+) tokens\/s/.exec(figures)![1]) > 0, figures);
      assert.match(await row.textContent() ?? "", /yes/, "the chat loaded the model");
    });

    await t.step("Shift+Enter starts a new line; Enter sends", async () => {
      await message.fill("first line");
      await message.press("Shift+Enter");
      await message.pressSequentially("second line");
      assert.equal(await message.inputValue(), "first line\nsecond line");
      assert.equal(await answers.count(), 1, "nothing was sent");
    });

    await t.step("Stop ends an answer in the middle", async () => {
      await form.getByLabel("Max tokens").fill("4000");
      await message.press("Enter");
      const answer = answers.last();
      await waitFor(
        async () => ((await answer.locator(".text").textContent()) ?? "").length > 20,
        "the answer to start",
        60_000,
      );
      assert.equal(await answer.getAttribute("data-state"), "streaming");
      await form.getByRole("button", { name: "Stop" }).click();
      await answer.and(page.locator('[data-state="stopped"]')).waitFor();
      assert.equal(await answer.locator(".figures").textContent(), "Stopped.");
      assert.equal(await form.getByRole("button", { name: "Stop" }).count(), 0);
      // Runs in the page, where the DOM's globals are.
      assert.equal(await page.evaluate("document.activeElement.tagName"), "TEXTAREA", "focus");
      const stopped = (await answer.locator(".text").textContent())!;
      // The node stopped generating: the model is free at once for the next message.
      await form.getByLabel("Max tokens").fill("10");
      await message.fill("And now?");
      await message.press("Enter");
      await answers.nth(2).and(page.locator('[data-state="done"]')).waitFor({ timeout: 30_000 });
      // Well before the 4000 tokens, at the first answer's characters per token.
      const perToken = (await answers.first().locator(".text").textContent())!.length / 40;
      assert.ok(stopped.length < 2000 * perToken, `${stopped.length} characters before Stop`);
      assert.match(await answers.nth(2).locator(".figures").textContent() ?? "", /^10 tokens/);
      await page.screenshot({ path: `${SHOTS}chat.png`, fullPage: true });
      assert.deepEqual(await accessibilityProblems(page), [], "axe-core: the models page");
    });

    await t.step("a model that fails says why", async () => {
      await form.getByRole("combobox", { name: /^Model/ }).selectOption("hollow");
      await message.fill("Anyone there?");
      await message.press("Enter");
      const answer = answers.last();
      await answer.and(page.locator('[data-state="failed"]')).waitFor({ timeout: 60_000 });
      assert.ok((await answer.locator(".notice.error").textContent())!.length > 0);
      await form.getByRole("combobox", { name: /^Model/ }).selectOption("tiny");
    });

    await t.step("a phone-sized screen", async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      await log.scrollIntoViewIfNeeded();
      const overflow = await page.evaluate(
        "document.documentElement.scrollWidth - innerWidth",
      ) as number;
      await page.screenshot({ path: `${SHOTS}phone-chat.png`, fullPage: true });
      assert.ok(overflow <= 0, `the page is ${overflow} px wider than the screen`);
      await page.setViewportSize({ width: 1280, height: 900 });
    });

    await t.step("the conversation outlives a visit to another page", async () => {
      await page.getByRole("link", { name: "Overview" }).click();
      await page.getByTestId("node-id").waitFor();
      await page.getByRole("link", { name: "Models" }).click();
      await log.waitFor();
      assert.equal(await answers.count(), 4);
      assert.equal(await log.locator(".turn.user").count(), 4);
      await page.getByRole("button", { name: "New conversation" }).click();
      assert.equal(await answers.count(), 0);
    });
  } finally {
    await browser.close();
  }
});
