package lockcore

// Reply parsers, exported to the black-box tests for fuzzing.
var (
	ParseAcquireReply = parseAcquireReply
	ParseReleaseReply = parseReleaseReply
)

// Release outcomes, as ParseReleaseReply reports them.
const (
	ReleaseNotHeld = releaseNotHeld
	ReleaseHeld    = releaseHeld
	ReleaseDone    = releaseDone
)
