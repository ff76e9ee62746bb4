/**
 * Figures as people read them.
 *
 * @module
 */

/** 1536 → "1.5 KiB". */
export { humanBytes as bytes } from "../../sdk/human_units.ts";

/** 93784 → "1 d 2 h 3 min". */
export function duration(seconds: number): string {
  const parts: string[] = [];
  const days = Math.floor(seconds / 86400);
  const hours = Math.floor((seconds % 86400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  if (days) parts.push(`${days} d`);
  if (hours) parts.push(`${hours} h`);
  if (minutes || parts.length === 0) parts.push(`${minutes} min`);
  return parts.join(" ");
}

/**
 * A parameter count as people say it: 7_241_732_096 → "7.2 B", 15_200_000 → "15.2 M",
 * 260_000 → "260 K". (In billions alone, every model under 50 M read "0.0 B".)
 */
export function parameters(count: number): string {
  const units: [number, string][] = [[1e3, "K"], [1e6, "M"], [1e9, "B"], [1e12, "T"]];
  // One decimal under 100, none above; 99.95 is "100", not "100.0".
  const shown = (value: number) => value >= 99.95 ? String(Math.round(value)) : value.toFixed(1);
  let at = units.findLastIndex(([size]) => count >= size);
  if (at < 0) return String(count);
  // 999_950 rounds to 1000 K: it reads as 1.0 M.
  if (Number(shown(count / units[at][0])) >= 1000 && at < units.length - 1) at++;
  return `${shown(count / units[at][0])} ${units[at][1]}`;
}

/** A time in ms as "2026-11-22 08:30" (UTC). */
export { humanTime as when } from "../../sdk/human_units.ts";
