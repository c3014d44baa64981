// Remote MCP servers: connect by URL, review the tools, publish the reviewed set as an immutable
// version, detect drift, and call them through the runner like packages.
export { authorizationHeader, checkRemoteUrl, connectRemote, type RemoteEndpoint, type RemoteProblem, type RemoteTransport } from "./remoteConnection.ts";
export { checkReview, formatReview, mergeReview, newReview, parseReview, schemaHash, type ListedTool, type Review, type ReviewChanges } from "./remoteReview.ts";
export { driftOf, exposedTools, publishRemote, reviewOfVersion, remoteContentHash, remoteVersionSchema, type Drift, type RemoteServerFacts, type RemoteVersion } from "./remoteVersion.ts";
export { advertises, listRemoteTools, remoteTarget, remoteTargetKind, type RemoteTargetOptions } from "./remoteTarget.ts";
export { isRemoteVersionId, loadPinnedRemote, readRemoteVersionFile, remotePackageVersion, verifyRemoteVersion, REMOTE_ID_PREFIX } from "./remotePin.ts";
export { listRemote, type RemoteListing } from "./remoteListing.ts";
export { guardedFetch, RemoteAddressRefused, type RemoteResolve } from "./remoteFetch.ts";
export { keepRemoteVersion, readRemoteVersions, remoteVersionFile } from "./remoteVersionFiles.ts";
