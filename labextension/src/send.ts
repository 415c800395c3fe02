/**
 * The one place that sends on the kernel's main shell, with JupyterLab's
 * lower-level API instead of `comm.send`.
 *
 * JupyterLab 4.6 sends comm messages on kernel subshells by default, and a
 * subshell message can overtake the execute request on the main shell. Every
 * message of the bridge's comm is therefore built here and sent with no
 * subshell id, so a snapshot pushed on `executionScheduled` is handled by the
 * kernel before the cell it precedes.
 */
import { Kernel, KernelMessage } from '@jupyterlab/services';

/** Keep this comm off subshells where @jupyterlab/services has the switch (4.6+). */
export function keepOffSubshells(comm: Kernel.IComm): void {
  const c = comm as unknown as { commsOverSubshells?: string };
  if (c.commsOverSubshells !== undefined) {
    try {
      c.commsOverSubshells = 'disabled';
    } catch (e) {
      // older @jupyterlab/services: nothing to switch off
    }
  }
}

/** Send `data` on `comm` over the main shell; false when it cannot go. */
export function sendOnMainShell(
  kernel: Kernel.IKernelConnection | null,
  comm: Kernel.IComm | null,
  data: object
): boolean {
  if (!comm || comm.isDisposed || !kernel || kernel.isDisposed) {
    return false;
  }
  const msg = KernelMessage.createMessage({
    msgType: 'comm_msg',
    channel: 'shell',
    username: kernel.username,
    session: kernel.clientId,
    // no subshellId: the main shell, in order with execute requests
    content: { comm_id: comm.commId, data: data as KernelMessage.ICommMsgMsg['content']['data'] }
  });
  try {
    kernel.sendShellMessage(msg, false, true);
    return true;
  } catch (e) {
    console.warn('genai-magics-bridge: cannot send', e);
    return false;
  }
}
