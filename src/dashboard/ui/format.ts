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

/** A time in ms as "2026-11-22 08:30" (UTC). */
export { humanTime as when } from "../../sdk/human_units.ts";
