// Words for a failed cpp-httplib request, for the messages of the webhook and the peer probe:
// httplib::to_string alone says "Connection" or "Read", which does not tell a user whether nothing
// listens at the address or something listens and never answers. Pure; any thread.
#pragma once

#include <httplib.h>

#include <string>

namespace ww::watch {

// "cannot connect (refused, unreachable, or nothing listens there) [Connection]", "connected, but
// no answer within 2 s, or the connection dropped [Read]", ...: what went wrong in words, httplib's
// own name for it in brackets. `read_timeout_s`: the client's read timeout.
std::string DescribeHttpError(httplib::Error error, double read_timeout_s);

}  // namespace ww::watch
