package protocol

// CommandPrefix starts every command's path: /sts/<COMMAND>.
const CommandPrefix = "/sts/"

// Command names, as they appear in a command's path (CommandPrefix + name) and in Answer.Command.
const (
	CmdInitFile  = "INITFILE"
	CmdRead      = "READ"
	CmdReadMulti = "READMULTI"
	CmdAdd       = "ADD"
	CmdFind      = "FIND"
	CmdLength    = "LENGTH"
	CmdStatus    = "STATUS"
	CmdSave      = "SAVE"
	CmdReset     = "RESET"
	CmdConfig    = "CONFIG"
	CmdStop      = "STOP"
	CmdHelp      = "HELP"
	CmdLoad      = "LOAD"
	CmdExport    = "EXPORT"
	CmdAck       = "ACK"
	CmdRelease   = "RELEASE"
	CmdExtend    = "EXTEND"
	CmdReload    = "RELOAD"
)
