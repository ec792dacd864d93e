/** Waiting on one Firestore document through a listener (the orchestration bench's clock). */
import type { Firestore } from '@google-cloud/firestore';

/** Resolves with the update time (ms) of the first version of the document that satisfies `test`. */
export function whenDoc(
  db: Firestore,
  path: string,
  test: (data: unknown, exists: boolean) => boolean,
  timeoutMs: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`${path}: not reached within ${timeoutMs} ms`));
    }, timeoutMs);
    const unsubscribe = db.doc(path).onSnapshot(
      (snap) => {
        if (!test(snap.data(), snap.exists)) return;
        clearTimeout(timer);
        unsubscribe();
        resolve(snap.exists ? (snap.updateTime?.toMillis() ?? Date.now()) : snap.readTime.toMillis());
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
