/**
 * Start-up recovery of the model store: makes records and files agree after a crash or an
 * unclean stop, before the node serves a request.
 *
 * @module
 */
import { describeModelFile } from "./gguf_metadata.ts";
import { formatOf } from "./model_format.ts";
import type { ModelFiles } from "./model_files.ts";
import type { CommittedFiles, FileFacts, ModelRecords } from "./model_records.ts";

/** What start-up recovery found and did. */
export interface RecoveryReport {
  removedPartials: number;
  removedOrphanFolders: number;
  promotedPending: number;
  markedNotReady: string[];
}

/**
 * Removes temporary files and folders without a record; settles commits a crash interrupted
 * (each pending file that arrived complete is recorded, by its hash); marks records whose model
 * file is missing or has the wrong size as not ready, and forgets projectors likewise.
 */
export async function recoverStore(
  records: ModelRecords,
  files: ModelFiles,
): Promise<RecoveryReport> {
  const { folders, removedPartials } = await files.sweep();
  const report: RecoveryReport = {
    removedPartials,
    removedOrphanFolders: 0,
    promotedPending: 0,
    markedNotReady: [],
  };
  for (const folder of folders) {
    if (records.get(folder)) continue;
    await files.removeModel(folder);
    report.removedOrphanFolders++;
  }
  const arrived = async (path: string, pending: FileFacts | undefined) =>
    pending !== undefined && (await files.stat(path))?.size === pending.size &&
    (await files.hashFile(path)) === pending.sha256;

  for (const record of records.list()) {
    const modelPath = files.pathFor(record, "model");
    const mmprojPath = files.pathFor(record, "mmproj");
    if (record.pendingModel || record.pendingMmproj) {
      const settled: CommittedFiles = {};
      if (await arrived(modelPath, record.pendingModel)) {
        // The file passed the header walk before it became pending; should it fail now (it
        // was changed on disk), it is still recorded, just without metadata.
        settled.model = {
          ...record.pendingModel!,
          ...await describeModelFile(modelPath, formatOf(record.kind)).catch(() => ({})),
        };
      }
      if (await arrived(mmprojPath, record.pendingMmproj)) settled.mmproj = record.pendingMmproj;
      if (settled.model || settled.mmproj) report.promotedPending++;
      records.commitFiles(record.id, settled);
    }
    const current = records.get(record.id)!;
    if (current.ready && (await files.stat(modelPath))?.size !== current.totalSize) {
      records.markNotReady(record.id);
      report.markedNotReady.push(record.id);
    }
    if (current.mmproj && (await files.stat(mmprojPath))?.size !== current.mmproj.size) {
      records.clearMmproj(record.id);
    }
  }
  return report;
}
