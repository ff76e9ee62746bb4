/**
 * playwright-core checks at load whether it runs under WSL by probing
 * /proc/sys/fs/binfmt_misc/WSLInterop. Deno grants /proc/sys paths only with --allow-all, and its
 * node:fs existsSync then throws instead of answering false, so the probe would need the tests to
 * run with every permission. This module, imported before playwright-core, answers false for
 * /proc/sys paths: the tests never run under WSL.
 *
 * @module
 */
import fs from "node:fs";

const existsSync = fs.existsSync;
fs.existsSync = (path: fs.PathLike) =>
  String(path).startsWith("/proc/sys/") ? false : existsSync(path);
