/**
 * The dashboard as a service of the node (spec/dashboard.yaml): its status endpoint under
 * /dashboard, its page at the configured path and its assets. A node with the dashboard off does
 * not list this service at all.
 *
 * @module
 */
import { mountRoutes } from "../http/routes.ts";
import type { Service } from "../http/service.ts";
import { dashboardHandlers, dashboardRoutes, mountDashboardPage } from "./routes.ts";
import type { StatusSources } from "./status.ts";

/** How the dashboard is offered. */
export interface DashboardServiceSettings {
  /** Where the page is. */
  path: string;
  apiKey: string;
  readsRequireKey: boolean;
}

/** The dashboard's service, its status read from `sources`. */
export function dashboardService(
  sources: StatusSources,
  settings: DashboardServiceSettings,
): Service {
  const { path, apiKey, readsRequireKey } = settings;
  return {
    name: "dashboard",
    prefixes: ["/dashboard"],
    mount(pipeline) {
      mountRoutes(pipeline, dashboardRoutes, dashboardHandlers(sources), {
        apiKey,
        readsRequireKey,
        prefixes: [""],
      });
      mountDashboardPage(pipeline, path);
    },
  };
}
