/**
 * The reply to a kernel's request: `ok` with what was done, or `ok: false`
 * with the error's one line. Pure, so it is unit-tested against the schema.
 */
import { IReply } from './protocol';

/** What a performed request tells the kernel besides `ok`. */
export type Done = Pick<IReply, 'cell_id' | 'cell'>;

export function replyTo(requestId: number, perform: () => Done): IReply {
  try {
    return { type: 'reply', request_id: requestId, ok: true, ...perform() };
  } catch (e) {
    return {
      type: 'reply',
      request_id: requestId,
      ok: false,
      error: e instanceof Error ? e.message : String(e)
    };
  }
}
