/**
 * The records of images, containers and client segments in the node's database. Files (the
 * bundles) are bundle_files.ts's; a record is committed only after its file is in place.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";

/** An image as stored. */
export interface ImageRecord {
  id: string;
  client: string;
  name: string;
  /** sha256:<hex> of the uploaded archive. */
  digest: string;
  size: number;
  /** Unix seconds. */
  created: number;
  /** Hex SHA-256 of its index.js, the name of its bundle file. */
  bundle: string;
  /** The archive's RepoTags (docker-save manifest), else `<name>:latest`. */
  repoTags: string[];
}

/** A container as stored: what it takes to start it again. */
export interface ContainerRecord {
  id: string;
  client: string;
  name: string;
  imageId: string;
  imageName: string;
  /** The bundle it runs, pinned at deployment. */
  bundle: string;
  /** The env as requested (MCM.BASE_API_PATH is the requested path). */
  env: Record<string, string>;
  /** The served base path, with the client segment. */
  basePath: string;
  /** `/api<requested path>` when MCM.API_ALIAS is "true". */
  alias: string | null;
  /** Unix milliseconds. */
  created: number;
  /**
   * It brought down its client's shared process too often: it runs in a process of its own
   * until it is redeployed (a redeploy's record starts without it).
   */
  quarantined?: boolean;
  /**
   * Stopped on purpose (POST .../stop): a node restart keeps it stopped; a restart or a
   * redeploy (putContainer) clears it.
   */
  stopped?: boolean;
}

type Row = Record<string, unknown>;

const containerOf = (row: Row): ContainerRecord => ({
  id: row.id as string,
  client: row.client as string,
  name: row.name as string,
  imageId: row.image_id as string,
  imageName: row.image_name as string,
  bundle: row.bundle as string,
  env: JSON.parse(row.env as string),
  basePath: row.base_path as string,
  alias: row.alias as string | null,
  created: Number(row.created),
  ...(row.quarantined ? { quarantined: true } : {}),
  ...(row.stopped ? { stopped: true } : {}),
});

const imageOf = (row: Row): ImageRecord => ({
  id: row.id as string,
  client: row.client as string,
  name: row.name as string,
  digest: row.digest as string,
  size: Number(row.size),
  created: Number(row.created),
  bundle: row.bundle as string,
  repoTags: row.repo_tags ? JSON.parse(row.repo_tags as string) : [`${row.name}:latest`],
});

/** Images, containers and clients in SQLite. */
export class McmRecords {
  readonly #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(`
      CREATE TABLE IF NOT EXISTS mcm_images (
        id TEXT PRIMARY KEY, client TEXT NOT NULL, name TEXT NOT NULL, digest TEXT NOT NULL,
        size INTEGER NOT NULL, created INTEGER NOT NULL, bundle TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS mcm_containers (
        id TEXT PRIMARY KEY, client TEXT NOT NULL, name TEXT NOT NULL, image_id TEXT NOT NULL,
        image_name TEXT NOT NULL, bundle TEXT NOT NULL, env TEXT NOT NULL,
        base_path TEXT NOT NULL UNIQUE, alias TEXT UNIQUE, created INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS mcm_clients (client TEXT PRIMARY KEY, segment TEXT NOT NULL UNIQUE);
    `);
    // Added after the first release: databases made before it get the column (NULL: derived).
    const columns = db.prepare("PRAGMA table_info(mcm_images)").all() as Row[];
    if (!columns.some((column) => column.name === "repo_tags")) {
      db.exec("ALTER TABLE mcm_images ADD COLUMN repo_tags TEXT");
    }
    const containerColumns = db.prepare("PRAGMA table_info(mcm_containers)").all() as Row[];
    if (!containerColumns.some((column) => column.name === "quarantined")) {
      db.exec("ALTER TABLE mcm_containers ADD COLUMN quarantined INTEGER NOT NULL DEFAULT 0");
    }
    if (!containerColumns.some((column) => column.name === "stopped")) {
      db.exec("ALTER TABLE mcm_containers ADD COLUMN stopped INTEGER NOT NULL DEFAULT 0");
    }
  }

  /** The path segment of a client, made (a random UUID) and kept at its first deployment. */
  segmentOf(client: string, preferred: string | undefined): string {
    const row = this.#db.prepare("SELECT segment FROM mcm_clients WHERE client = ?").get(client);
    if (row) return row.segment as string;
    const taken = preferred !== undefined &&
      this.#db.prepare("SELECT 1 FROM mcm_clients WHERE segment = ?").get(preferred);
    const segment = preferred !== undefined && !taken ? preferred : crypto.randomUUID();
    this.#db.prepare("INSERT INTO mcm_clients (client, segment) VALUES (?, ?)").run(
      client,
      segment,
    );
    return segment;
  }

  /** Every client segment. */
  segments(): string[] {
    return this.#db.prepare("SELECT segment FROM mcm_clients").all().map((r) =>
      r.segment as string
    );
  }

  image(id: string): ImageRecord | undefined {
    const row = this.#db.prepare("SELECT * FROM mcm_images WHERE id = ?").get(id);
    return row ? imageOf(row) : undefined;
  }

  /** The images of `client` (every client's when undefined), oldest first. */
  images(client: string | undefined): ImageRecord[] {
    const rows = client === undefined
      ? this.#db.prepare("SELECT * FROM mcm_images ORDER BY created, id").all()
      : this.#db.prepare("SELECT * FROM mcm_images WHERE client = ? ORDER BY created, id").all(
        client,
      );
    return rows.map(imageOf);
  }

  /** Inserts or replaces an image; returns the bundle it had before, if any. */
  putImage(image: ImageRecord): string | undefined {
    const before = this.image(image.id)?.bundle;
    this.#db.prepare(
      `INSERT OR REPLACE INTO mcm_images (id, client, name, digest, size, created, bundle, repo_tags)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      image.id,
      image.client,
      image.name,
      image.digest,
      image.size,
      image.created,
      image.bundle,
      JSON.stringify(image.repoTags),
    );
    return before;
  }

  deleteImage(id: string): void {
    this.#db.prepare("DELETE FROM mcm_images WHERE id = ?").run(id);
  }

  container(id: string): ContainerRecord | undefined {
    const row = this.#db.prepare("SELECT * FROM mcm_containers WHERE id = ?").get(id);
    return row ? containerOf(row) : undefined;
  }

  /** The containers of `client` (every client's when undefined), oldest first. */
  containers(client?: string): ContainerRecord[] {
    const rows = client === undefined
      ? this.#db.prepare("SELECT * FROM mcm_containers ORDER BY created, id").all()
      : this.#db.prepare("SELECT * FROM mcm_containers WHERE client = ? ORDER BY created, id")
        .all(client);
    return rows.map(containerOf);
  }

  /** The container serving `basePath` or `alias`, other than `exceptId`. */
  pathOwner(basePath: string, alias: string | null, exceptId: string): ContainerRecord | undefined {
    const row = this.#db.prepare(
      `SELECT * FROM mcm_containers WHERE id != ? AND (base_path = ? OR alias = ? OR alias = ?)`,
    ).get(exceptId, basePath, alias, basePath);
    return row ? containerOf(row) : undefined;
  }

  putContainer(container: ContainerRecord): void {
    this.#db.prepare(
      `INSERT OR REPLACE INTO mcm_containers
       (id, client, name, image_id, image_name, bundle, env, base_path, alias, created)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      container.id,
      container.client,
      container.name,
      container.imageId,
      container.imageName,
      container.bundle,
      JSON.stringify(container.env),
      container.basePath,
      container.alias,
      container.created,
    );
  }

  /**
   * Marks a container as running in a process of its own from now on (it survives node
   * restarts; putContainer, a redeploy, clears it).
   */
  quarantine(id: string): void {
    this.#db.prepare("UPDATE mcm_containers SET quarantined = 1 WHERE id = ?").run(id);
  }

  /** Marks a container as stopped on purpose, or not (it survives node restarts). */
  setStopped(id: string, stopped: boolean): void {
    this.#db.prepare("UPDATE mcm_containers SET stopped = ? WHERE id = ?").run(stopped ? 1 : 0, id);
  }

  deleteContainer(id: string): void {
    this.#db.prepare("DELETE FROM mcm_containers WHERE id = ?").run(id);
  }

  /** Whether any image or container still needs this bundle file. */
  bundleInUse(bundle: string): boolean {
    return Boolean(
      this.#db.prepare(
        "SELECT 1 FROM mcm_images WHERE bundle = ? UNION SELECT 1 FROM mcm_containers WHERE bundle = ?",
      ).get(bundle, bundle),
    );
  }

  /** How many containers use each image, by image id. */
  usage(): Map<string, number> {
    const rows = this.#db.prepare(
      "SELECT image_id, COUNT(*) AS n FROM mcm_containers GROUP BY image_id",
    ).all();
    return new Map(rows.map((row) => [row.image_id as string, Number(row.n)]));
  }
}
