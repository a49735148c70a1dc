// The page's compile cache: whole compile artifacts in IndexedDB, by compile key. The
// worker owns it. Entries are never trusted: an entry stored under another key or by
// another compiler version is dropped here, and the compiler checks the artifact's own
// header and digest before using it (a corrupted one is rebuilt and stored over).

/** Where compile artifacts outlive a page load. Every method may throw (no IndexedDB). */
export interface CompileCache {
  /** The bytes stored under `key` by this compiler version, or null. */
  get(key: string): Promise<Uint8Array | null>;
  /** Stores `bytes` under `key`. */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** Drops every entry. */
  clear(): Promise<void>;
}

/** One stored artifact. */
export interface CacheEntry {
  key: string;
  /** The compiler version that made it. */
  version: string;
  bytes: Uint8Array;
}

/**
 * The key a compile's pass snapshots are stored under, apart from its artifact (as the
 * compiler's `artifact_cache::passes_key`): a warm run decodes the small artifact it needs,
 * the snapshots only for the views that show them.
 */
export function passesKey(key: string): string {
  return `${key}.passes`;
}

/** The database and its one object store, keyed by compile key. */
export const CACHE_DB = "spyre-compile-cache";
export const CACHE_STORE = "artifacts";

/**
 * The entry's bytes when it is one for `key` from compiler `version`; null for anything
 * else (another key or version, a record of the wrong shape), which the caller drops.
 */
export function usableEntry(entry: unknown, key: string, version: string): Uint8Array | null {
  if (!entry || typeof entry !== "object") return null;
  const e = entry as Partial<CacheEntry>;
  if (e.key !== key || e.version !== version) return null;
  return e.bytes instanceof Uint8Array ? e.bytes : null;
}

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error ?? new Error("IndexedDB request failed"));
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error("IndexedDB transaction failed"));
    tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction aborted"));
  });
}

/** The compile cache in IndexedDB (`idb`: the global's, absent where there is none). */
export function indexedDbCache(
  version: string,
  idb: IDBFactory | undefined = globalThis.indexedDB,
): CompileCache {
  let db: Promise<IDBDatabase> | null = null;
  const open = (): Promise<IDBDatabase> => {
    if (!idb) return Promise.reject(new Error("this browser offers no IndexedDB"));
    if (!db) {
      const r = idb.open(CACHE_DB, 1);
      r.onupgradeneeded = () => {
        if (!r.result.objectStoreNames.contains(CACHE_STORE))
          r.result.createObjectStore(CACHE_STORE, { keyPath: "key" });
      };
      db = request(r).catch((err: unknown) => {
        // A later call tries again (the user may have freed space or changed a setting).
        db = null;
        throw err;
      });
    }
    return db;
  };
  const store = async (mode: IDBTransactionMode): Promise<[IDBObjectStore, IDBTransaction]> => {
    const tx = (await open()).transaction(CACHE_STORE, mode);
    return [tx.objectStore(CACHE_STORE), tx];
  };
  return {
    async get(key) {
      const [s] = await store("readonly");
      const entry = await request(s.get(key));
      if (entry === undefined) return null;
      const bytes = usableEntry(entry, key, version);
      if (bytes === null) {
        // Stale: no compiler of this version will read it.
        const [w, tx] = await store("readwrite");
        w.delete(key);
        await done(tx);
      }
      return bytes;
    },
    async put(key, bytes) {
      const [s, tx] = await store("readwrite");
      const entry: CacheEntry = { key, version, bytes };
      s.put(entry);
      await done(tx);
    },
    async clear() {
      const [s, tx] = await store("readwrite");
      s.clear();
      await done(tx);
    },
  };
}
