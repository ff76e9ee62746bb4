import assert from "node:assert/strict";
import { queryOf } from "./routes.ts";

/** What queryOf gave before its plain-query path: URLSearchParams' pairs. */
function bySearchParams(search: string): Record<string, string> | string {
  const query: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(search)) {
    if (key in query) return "twice";
    query[key] = value;
  }
  return query;
}

Deno.test("routes: queryOf reads a query as URLSearchParams does", () => {
  const searches = [
    "?ping=true",
    "?ping=true&challenge=abc",
    "?a",
    "?a=",
    "?=b",
    "?=",
    "?&&a=1&&b=2&",
    "?a=1=2",
    "?a=1&a=2",
    "?a=x+y",
    "?a=%41%zz%",
    "?caf\u00e9=1",
    "?a=\ud800",
    "?a=b?c",
    "?a=;b,c/d:e@f",
    "?",
    "??a=1",
    "a=1&b",
    "?a=1&A=2",
    "?__proto__=1",
    "?constructor=x",
  ];
  for (const search of searches) {
    let got: Record<string, string> | string;
    try {
      got = queryOf(search);
    } catch {
      got = "twice";
    }
    assert.deepEqual(got, search.length <= 1 ? {} : bySearchParams(search), search);
  }
});
