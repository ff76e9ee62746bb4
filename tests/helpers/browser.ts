/**
 * A real browser for the dashboard tests: Debian's Chromium driven by playwright-core. The test
 * set-up installs Chromium with apt when it is missing and the tests run as root; otherwise the
 * tests say why they skip.
 *
 * @module
 */
import "./wsl_probe_guard.ts";
import { type Browser, chromium } from "playwright-core";
import { debianPackage } from "../../testing/debian.ts";

const CHROMIUM = "/usr/bin/chromium";

/** Where screenshots go: $EDGENODE_TEST_ARTIFACTS, else test-artifacts/ in the repository. */
export const ARTIFACTS = Deno.env.get("EDGENODE_TEST_ARTIFACTS") ??
  new URL("../../test-artifacts/", import.meta.url).pathname;

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Chromium's path, installed with apt if need be; or why there is none. */
export async function chromiumPath(): Promise<{ path: string } | { missing: string }> {
  const found = await debianPackage("chromium", () => exists(CHROMIUM));
  return found === true ? { path: CHROMIUM } : found;
}

/**
 * Launches headless Chromium. The flags keep it from reaching out to Google's services, which a
 * closed network refuses (../shared/notes: the machine's notes on Chromium).
 */
export function launchBrowser(path: string): Promise<Browser> {
  return chromium.launch({
    executablePath: path,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
