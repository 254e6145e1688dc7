import SystemCalls

/// SystemCalls' error, under the name Protocol's callers (clients, tests) have always used.
public typealias SystemError = SystemCalls.SystemError
