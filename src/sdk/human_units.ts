/**
 * Figures of a node as people read them, for the CLI, the dashboard and other clients.
 *
 * @module
 */

/** Bytes in human units: 1.5 GiB, 300 MiB, 12 KiB, 512 B; undefined is "-". */
export function humanBytes(bytes: number | undefined): string {
  if (bytes === undefined) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** A time in milliseconds since 1970, to the minute in UTC: "2026-11-22 08:30". */
export function humanTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16).replace("T", " ");
}
