/**
 * What the dashboard says where a bare figure or an API's wording would leave a user guessing:
 * what a microservice's answer means, the command that stores an account token, where the API
 * key is, and how full a disk is.
 *
 * @module
 */

/** Where a node keeps its API key, unless it runs with --data-dir or EDGENODE_DATA_DIR. */
export const DEFAULT_CONFIG_PATH = "~/.edgenode/config.json";

/**
 * A microservice's answer to GET of its base path, as the Answers column says it: `yes` for
 * any answer short of a server error (it runs), with what the status means.
 */
export function answerText(status: number | undefined): { text: string; title: string } {
  if (status === undefined) {
    return { text: "no (no answer)", title: "The request to its base path got no answer." };
  }
  if (status < 400) {
    return { text: `yes (${status})`, title: `It answered its base path with ${status}.` };
  }
  if (status === 401 || status === 403) {
    return {
      text: `yes (${status}, wants a credential)`,
      title: `It runs, and asks for a credential at its base path (${status}).`,
    };
  }
  if (status < 500) {
    return {
      text: `yes (${status}, nothing at its base path)`,
      title: `It runs; its routes are below its base path, which answered ${status}.`,
    };
  }
  return {
    text: `no (${status}, it failed)`,
    title: `Its base path answered ${status}: it failed or did not start; see its logs.`,
  };
}

/** The CLI command that stores an account token (spec: PUT /mesh/insight/v1/token). */
export const STORE_TOKEN_COMMAND = "edgenode account-token --token-file FILE";

/**
 * An insight error about the account token, without the API's "PUT /token with a valid one"
 * (the page shows the command instead); undefined for other errors.
 */
export function tokenProblem(message: string): string | undefined {
  if (!/account token/i.test(message)) return undefined;
  return message.replace(/:\s*PUT \/token.*$/, "").trim();
}

/** A disk meter's thresholds: green up to three quarters full, then yellow, red past 90 %. */
export function diskMeterLevels(totalBytes: number): { low: number; high: number; optimum: 0 } {
  return { low: totalBytes * 0.75, high: totalBytes * 0.9, optimum: 0 };
}
