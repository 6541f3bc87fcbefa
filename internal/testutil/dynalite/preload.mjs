// Loaded into dynalite with `node --import data:...` by the Go test helper.
//
// dynalite 4.0.0 throws from a request's 'error' listener
// (index.js: req.on('error', function (err) { throw err })), so a client that
// aborts a request mid-flight -- a cancelled context, a scan stopped early --
// kills the whole server. DynamoDB shrugs such aborts off; so does this: an
// aborted request is ignored, any other uncaught error still ends the process.

process.on('uncaughtException', function (err) {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) return
  console.error(err)
  process.exit(1)
})
