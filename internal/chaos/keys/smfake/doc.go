// Package smfake is an in-memory AWS Secrets Manager for tests: an
// httptest server speaking the service's JSON 1.1 protocol to the real SDK
// client, for GetSecretValue, PutSecretValue and UpdateSecretVersionStage.
//
// It enforces the service's documented rules for versions and staging
// labels, so code that is wrong against Secrets Manager is wrong against the
// fake:
//
//   - A staging label is attached to at most one version; attaching it to
//     another version moves it (PutSecretValue VersionStages).
//   - The first version of a secret gets AWSCURRENT whatever VersionStages
//     says; PutSecretValue without VersionStages moves AWSCURRENT to the new
//     version.
//   - Whenever AWSCURRENT moves, AWSPREVIOUS moves to the version it left.
//   - UpdateSecretVersionStage: moving a label that is attached to another
//     version needs RemoveFromVersionId naming that version, else the call
//     fails (InvalidParameterException); so does removing a label from a
//     version that does not hold it. AWSCURRENT cannot be removed without
//     being moved.
//   - At most 20 staging labels per version (LimitExceededException), each
//     1 to 256 characters.
//   - ClientRequestToken (32 to 64 characters) is the new version's id:
//     repeating a put with the same token and value is idempotent, with the
//     same token and another value it fails (ResourceExistsException).
//   - Past 100 versions, versions without labels created more than 24 hours
//     ago are deleted, oldest first; labeled versions are never deleted.
//
// Versions are stamped with the server's clock, so tests control
// CreatedDate. Failures can be injected per operation, calls are recorded,
// and [Server.BeforeNext] runs a function just before an operation is
// served, to interleave another writer deterministically.
package smfake
