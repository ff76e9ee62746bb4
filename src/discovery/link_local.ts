/**
 * Link-local discovery: announces this node over multicast DNS, answers queries, verifies the
 * peers it hears of (and the static peers it is given), and keeps the membership, the supernode
 * and the network id current. The protocol and timers are in spec/mds.yaml.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import type dnsPacket from "dns-packet";
import type { NodeDescription } from "../../gen/mds/validators.ts";
import {
  type Announcement,
  announcementPacket,
  announcementsIn,
  answersFor,
  type OwnRecords,
  responsePacket,
  SERVICE_TYPE,
  txtStrings,
} from "./mdns_records.ts";
import { interfaceAddresses, MdnsSocket, type Sender } from "./mdns_socket.ts";
import { CheckQueue } from "./check_queue.ts";
import { MulticastResponder, withoutCacheFlush, withoutKnownAnswers } from "./mdns_responder.ts";
import { byElection, electSupernode, Members } from "./members.ts";
import { checkPeer } from "./peer_proof.ts";
import { checkFailureCause, CheckFailureLog } from "./check_failures.ts";

/** How discovery runs (the `discovery` section of the configuration, with defaults). */
export interface DiscoverySettings {
  mdns: boolean;
  /** Interface names or addresses; absent: where the node listens. */
  interfaces?: string[];
  port: number;
  announceSeconds: number;
  /** Base URLs of static peers. */
  peers: string[];
}

/** What this node says of itself, apart from what discovery decides (start, network id). */
export type SelfDescription = Omit<NodeDescription, "startedAt" | "localLinkNetworkId">;

/** Records live this many announce intervals. */
const TTL_INTERVALS = 3;
/** Peer checks: 8 at once, 256 waiting, a failed peer and address not again within 5 s. */
const CHECK_LIMITS = { concurrency: 8, maxWaiting: 256, retryMs: 5000 };
/** Records heard are kept at most this long, whatever TTL they carry. */
const MAX_TTL_SECONDS = 4500;
/** Legacy unicast answers: at most this many a second (a flood must not be reflected). */
const LEGACY_ANSWERS_PER_SECOND = 20;
/**
 * A changed TXT is announced at once, but not within this long of the last announcement
 * (RFC 6762 §6: a record at most once a second), so a burst of deploys makes one announcement.
 */
const MIN_CHANGE_ANNOUNCE_MS = 1000;
/**
 * Static peers are checked at least this often: they hear no announcement, so this is how soon
 * a peer's deploy, stop or removal shows (one proof request a peer; a list is short).
 */
const STATIC_PEER_CHECK_MS = 3000;
/** Static peers checked at each turn (10 a second at most in all). */
const STATIC_PEERS_AT_ONCE = 30;

/**
 * The `svc` TXT value: a digest of the node's services and models, which changes with a deploy,
 * a stop or a removal, and with a model created, provisioned, loaded, unloaded or deleted, so
 * that peers verify the node again (they do only when its TXT changes). A model's free
 * sequences and queue depth are left out: they change with every request, and an announcement
 * each time would break the mDNS rate rules and make every peer verify the node again.
 */
export function changeDigest(self: Pick<SelfDescription, "services" | "models">): string {
  const services = self.services.map((s) => [s.id, s.serviceType, s.status ?? ""]);
  const models = (self.models ?? []).map((
    m,
  ) => [m.id, m.kind, m.sha256, m.size, m.ready, m.loaded]);
  // Without models the digest is what it was before they were advertised.
  const text = JSON.stringify(models.length > 0 ? [services, models] : services);
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/** The discovery service of one node. */
export class LinkLocal {
  readonly #describe: () => SelfDescription;
  readonly #settings: DiscoverySettings;
  readonly #members = new Members();
  readonly #startedAt = Date.now();
  readonly #checks = new CheckQueue(CHECK_LIMITS);
  /** Failed checks, logged with their cause and bounded (src/discovery/check_failures.ts). */
  readonly #failures = new CheckFailureLog();
  #networkId = `lln-${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex")}`;
  #socket: MdnsSocket | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #announcedTxt = "";
  #announcedAt = -Infinity;
  #nextAnnounceAt = 0;
  #startupAnnouncements = 3;
  #nextStaticCheckAt = 0;
  /** The static peer whose turn is next. */
  #nextStaticPeer = 0;
  #responder: MulticastResponder | undefined;
  #legacyWindow = { startedAt: 0, count: 0 };
  /** Why multicast DNS could not be set up, when it could not. */
  #mdnsUnavailable: string | undefined;

  constructor(describe: () => SelfDescription, settings: DiscoverySettings) {
    this.#describe = describe;
    this.#settings = settings;
  }

  get #announceMs(): number {
    return this.#settings.announceSeconds * 1000;
  }

  get #ttlSeconds(): number {
    return Math.max(1, Math.round(this.#settings.announceSeconds * TTL_INTERVALS));
  }

  /** Starts announcing and listening; `listenHost` is the address the HTTP server is bound to. */
  async start(listenHost: string): Promise<void> {
    if (this.#settings.mdns) {
      const wildcard = listenHost === "0.0.0.0" || listenHost === "::";
      const interfaces = interfaceAddresses(
        this.#settings.interfaces ?? (wildcard ? undefined : [listenHost]),
      );
      try {
        this.#socket = await MdnsSocket.open(
          this.#settings.port,
          interfaces,
          (packet, from) => this.#onPacket(packet, from),
        );
      } catch (error) {
        // The node is still useful without multicast (static peers, every other service).
        this.#mdnsUnavailable = (error as Error).message;
        console.warn(
          `discovery: multicast DNS is unavailable (${this.#mdnsUnavailable}); the node serves ` +
            "without link-local discovery: set discovery.mdns to false to run without it, " +
            "or discovery.peers to list peers",
        );
      }
      const socket = this.#socket;
      if (socket) {
        this.#responder = new MulticastResponder({
          send: (answers, additionals) =>
            void socket.multicast(responsePacket(answers, additionals)),
        });
      }
      await this.#socket?.multicast({
        type: "query",
        id: 0,
        questions: [{ type: "PTR", name: SERVICE_TYPE }],
      });
    }
    this.#tick();
    this.#timer = setInterval(() => this.#tick(), Math.min(1000, this.#announceMs / 2));
  }

  /**
   * Why multicast DNS could not be set up (the socket's bind, group membership or outgoing
   * interface failed), when discovery.mdns asked for it and it could not; the node then lists
   * only itself and its static peers.
   */
  get mdnsUnavailable(): string | undefined {
    return this.#mdnsUnavailable;
  }

  /** Sends the goodbye and stops; call after the HTTP server has stopped. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#responder?.close();
    if (!this.#socket) return;
    await this.#socket.multicast(announcementPacket(this.#ownRecords(), 0));
    await this.#socket.close();
  }

  /** This node's description now. */
  self(): NodeDescription {
    return {
      ...this.#describe(),
      startedAt: this.#startedAt,
      localLinkNetworkId: this.#networkId,
    };
  }

  /** The local link network id this node shares with its supernode. */
  get networkId(): string {
    return this.#networkId;
  }

  /** Every member, this node included, supernode first. */
  members(): NodeDescription[] {
    return [this.self(), ...this.#members.list().map((peer) => peer.node)].sort(byElection);
  }

  /** The elected supernode. */
  supernode(): NodeDescription {
    return electSupernode(this.members());
  }

  #tick(): void {
    const now = Date.now();
    this.#members.expire(now);
    this.#checks.prune(now);
    this.#adoptNetworkId();
    const txt = txtStrings(this.#ownRecords().txt).join("\n");
    const changed = txt !== this.#announcedTxt && now - this.#announcedAt >= MIN_CHANGE_ANNOUNCE_MS;
    if (this.#socket && (now >= this.#nextAnnounceAt || changed)) {
      this.#announcedTxt = txt;
      this.#announcedAt = now;
      this.#startupAnnouncements = Math.max(0, this.#startupAnnouncements - 1);
      this.#nextAnnounceAt = now + (this.#startupAnnouncements > 0 ? 1000 : this.#announceMs);
      const packet = announcementPacket(this.#ownRecords(), this.#ttlSeconds);
      void this.#socket.multicast(packet);
      this.#responder?.sent(packet.answers ?? []);
    }
    if (now >= this.#nextStaticCheckAt) {
      this.#nextStaticCheckAt = now + Math.min(this.#announceMs, STATIC_PEER_CHECK_MS);
      // A long list in turns: at most STATIC_PEERS_AT_ONCE checks each time, round robin, so a
      // list of 256 takes 26 s a round and leaves the check queue room for announcements.
      const peers = this.#settings.peers;
      const turn = Math.min(peers.length, STATIC_PEERS_AT_ONCE);
      for (let i = 0; i < turn; i++) {
        const url = peers[(this.#nextStaticPeer + i) % peers.length];
        // Records of a static peer live through a whole round of turns.
        const rounds = Math.ceil(peers.length / STATIC_PEERS_AT_ONCE);
        this.#check(url, undefined, undefined, TTL_INTERVALS * this.#announceMs * rounds);
      }
      this.#nextStaticPeer = peers.length ? (this.#nextStaticPeer + turn) % peers.length : 0;
    }
  }

  /**
   * A member follows its supernode's network id; the supernode keeps its own. A new id is
   * announced at once, so that the members agree again quickly.
   */
  #adoptNetworkId(): void {
    const supernode = this.supernode();
    if (supernode.id === this.self().id || supernode.localLinkNetworkId === this.#networkId) return;
    this.#networkId = supernode.localLinkNetworkId;
    this.#tick();
  }

  #ownRecords(): OwnRecords {
    const self = this.self();
    const urls = self.addresses.map((address) => new URL(address.url.href));
    const port = Number(urls[0]?.port || 80);
    return {
      id: self.id,
      name: self.name,
      port,
      addresses: urls.map((url) => url.hostname).filter((host) => /^[0-9.]+$/.test(host)),
      txt: {
        id: self.id,
        name: self.name,
        os: self.os,
        ver: self.version,
        acct: self.accountId,
        port: String(port),
        lln: self.localLinkNetworkId,
        svc: changeDigest(self),
      },
    };
  }

  #onPacket(packet: dnsPacket.Packet, from: Sender): void {
    if (packet.type === "query") return this.#answer(packet, from);
    for (const announcement of announcementsIn(packet)) {
      if (announcement.id !== this.self().id) this.#onAnnouncement(announcement, from.address);
    }
  }

  #answer(query: dnsPacket.Packet, from: Sender): void {
    const socket = this.#socket;
    const responder = this.#responder;
    if (!socket || !responder || !query.questions?.length) return;
    // Legacy unicast (RFC 6762 §6.7): a resolver not on the mDNS port wants a plain DNS answer.
    const legacy = from.port !== this.#settings.port;
    const ttl = legacy ? Math.min(10, this.#ttlSeconds) : this.#ttlSeconds;
    const { answers, additionals } = answersFor(query.questions, this.#ownRecords(), ttl);
    if (answers.length === 0) return;
    if (legacy) {
      if (!this.#takeLegacyAnswer()) return;
      // The id and the question echoed, and no cache-flush bit (§6.7, §10.2): a plain DNS
      // resolver's cache must not read it as the class.
      void socket.unicast({
        ...responsePacket(withoutCacheFlush(answers), withoutCacheFlush(additionals)),
        id: query.id,
        questions: query.questions,
      }, from);
      return;
    }
    // Known-answer suppression (§7.1), then at most one multicast of a record a second (§6).
    const fresh = withoutKnownAnswers(answers, query.answers);
    if (fresh.length === 0) return;
    const bundles = fresh.map((answer) => ({
      answer,
      additionals: answer.type === "PTR" && answer.name === SERVICE_TYPE ? additionals : [],
    }));
    // Shared (PTR) answers wait 20-120 ms so that many responders do not collide (§6).
    const delay = fresh.some((a) => a.type === "PTR") ? 20 + Math.random() * 100 : 0;
    // A probe (a query with proposed records in its authority section) may be answered sooner.
    responder.queue(bundles, delay, (query.authorities?.length ?? 0) > 0);
  }

  /** Whether another legacy unicast answer fits in this second's allowance. */
  #takeLegacyAnswer(): boolean {
    const now = Date.now();
    if (now - this.#legacyWindow.startedAt >= 1000) {
      this.#legacyWindow = { startedAt: now, count: 0 };
    }
    return ++this.#legacyWindow.count <= LEGACY_ANSWERS_PER_SECOND;
  }

  #onAnnouncement(announcement: Announcement, address: string): void {
    const url = `http://${address}:${announcement.port}`;
    const known = this.#members.get(announcement.id);
    if (announcement.ttl === 0) {
      // A goodbye is checked, not believed: a forged one must not remove a live node.
      if (known) this.#check(known.url, announcement.id, undefined, 0);
      return;
    }
    const ttlMs = Math.min(announcement.ttl, MAX_TTL_SECONDS) * 1000;
    if (known && known.url === url && known.txtKey === announcement.txtKey) {
      this.#members.refresh(announcement.id, Date.now() + ttlMs);
      return;
    }
    this.#check(url, announcement.id, announcement.txtKey, ttlMs);
  }

  /**
   * Verifies the node at `url` and records it for `ttlMs`. A failed check of a goodbye
   * (`ttlMs` 0) removes the node at once; other failures leave the table as it was.
   */
  #check(url: string, claimedId: string | undefined, txtKey: string | undefined, ttlMs: number) {
    const goodbye = ttlMs === 0;
    const key = `${claimedId ?? "peer"} at ${url}`;
    this.#checks.add(key, async () => {
      this.#failures.checking();
      try {
        const node = await checkPeer(url, claimedId);
        this.#failures.succeeded(key);
        if (node.id === this.self().id) return;
        const known = this.#members.get(node.id);
        const expiresAt = goodbye ? (known?.expiresAt ?? 0) : Date.now() + ttlMs;
        this.#members.put({ node, url, expiresAt, txtKey: txtKey ?? known?.txtKey });
      } catch (error) {
        // A node long gone keeps announcing through caches for a while, and a line every few
        // seconds about it helps nobody: the log bounds the lines and counts the rest.
        this.#failures.failed(key, checkFailureCause(error));
        if (goodbye && claimedId) this.#members.remove(claimedId);
        throw error;
      } finally {
        this.#adoptNetworkId();
      }
    }, goodbye);
  }
}
