'use strict';
// A worker thread that waits for runs to end, one at a time, so that the event loop never does
// (lib/native.js, "the waiting threads"): it is sent a run (its sbx_run* as a BigInt), calls
// sbx_run_wait, which blocks until the run has ended, and answers with the same run. The event
// loop then takes the report itself: sbx_run_wait returns it again at once.
const { parentPort, workerData } = require('node:worker_threads');
const ffi = require('./ffi');

const c = ffi.open(workerData.library);  // the same libsbx: dlopen(3) returns the loaded one
ffi.blockSignals();

parentPort.on('message', (run) => {
  const error = [null];
  const report = c.sbx_run_wait(run, error);
  if (report) c.sbx_string_free(report);
  if (error[0]) c.sbx_error_free(error[0]);
  parentPort.postMessage(run);
});
