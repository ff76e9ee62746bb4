/**
 * What a container's env tells the node (spec/mcm.yaml, "Containers" and "Limits"): keys it
 * accepts, the limits MCM.MAX_EXECUTION_TIME_SEC, MCM.MEMORY_MB and MCM.MAX_OUTBOUND_REQUESTS
 * set and the process limits they make, and the base path MCM.BASE_API_PATH asks for. A bad value is a 400 (Invalid).
 *
 * @module
 */
import { Invalid } from "../../errors/mod.ts";
import { DEFAULT_OUTBOUND_REQUESTS, type WatchdogLimits } from "../sandbox/channel_protocol.ts";

const PATH_PATTERN = /^(\/[A-Za-z0-9._~-]+)+$/;
const ENV_KEY_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
const MAX_ENV_KEYS = 256;
/** The runtime's own share of a container process's memory, beyond MCM.MEMORY_MB. */
const RUNTIME_MEMORY_MB = 128;
/** CPU a microservice may use while serving no request: a share of a core, and its burst. */
const IDLE_CPU: Pick<WatchdogLimits, "idleCpuShare" | "idleCpuBurstMs"> = {
  idleCpuShare: 0.1,
  idleCpuBurstMs: 2000,
};
/** The most MCM.MAX_OUTBOUND_REQUESTS may ask for (each holds a socket of its process). */
const MAX_OUTBOUND_REQUESTS = 256;

/** A container's limits, from its env. */
export interface ContainerLimits {
  /** How long a request may run (MCM.MAX_EXECUTION_TIME_SEC). */
  executionMs: number;
  /** The microservice's memory (MCM.MEMORY_MB, else the node's mcm.memoryMb). */
  memoryMb: number;
  /** What the container process's watchdog holds it to. */
  watchdog: WatchdogLimits;
}

function integerEnv(
  env: Record<string, string>,
  key: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const text = env[key];
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new Invalid(`env ${key} must be an integer from ${min} to ${max} (got '${text}')`);
  }
  return value;
}

/** A container's limits from its env (400 for a bad value). */
export function limitsOf(
  env: Record<string, string>,
  defaultMemoryMb: number,
  /** The node's mcm.maxOutboundRequests. */
  defaultOutboundRequests = DEFAULT_OUTBOUND_REQUESTS,
): ContainerLimits {
  const executionMs = integerEnv(env, "MCM.MAX_EXECUTION_TIME_SEC", 1, 3600, 30) * 1000;
  const memoryMb = integerEnv(env, "MCM.MEMORY_MB", 16, 4096, defaultMemoryMb);
  const outboundRequests = integerEnv(
    env,
    "MCM.MAX_OUTBOUND_REQUESTS",
    1,
    MAX_OUTBOUND_REQUESTS,
    defaultOutboundRequests,
  );
  return {
    executionMs,
    memoryMb,
    watchdog: {
      memoryBytes: (memoryMb + RUNTIME_MEMORY_MB) * 2 ** 20,
      heapBytes: memoryMb * 2 ** 20,
      ...IDLE_CPU,
      busySilenceMs: executionMs + 2000,
      outboundRequests,
    },
  };
}

/**
 * The base path a start request's env asks for (MCM.BASE_API_PATH, default `/<name>`), once its
 * keys and limits are checked too (400 for the first that is wrong).
 */
export function checkedBasePath(
  env: Record<string, string>,
  name: string,
  defaultMemoryMb: number,
): string {
  const keys = Object.keys(env);
  if (keys.length > MAX_ENV_KEYS) throw new Invalid(`env has over ${MAX_ENV_KEYS} keys`);
  const badKey = keys.find((key) => !ENV_KEY_PATTERN.test(key));
  if (badKey !== undefined) {
    throw new Invalid(`env key '${badKey}' must be 1 to 128 letters, digits, '_', '.' or '-'`);
  }
  limitsOf(env, defaultMemoryMb);
  const given = env["MCM.BASE_API_PATH"] ?? `/${name}`;
  if (!PATH_PATTERN.test(given) || /\/\.\.?(\/|$)/.test(given)) {
    throw new Invalid(`env MCM.BASE_API_PATH must be a path like /hello/v1 (got '${given}')`);
  }
  return given;
}
