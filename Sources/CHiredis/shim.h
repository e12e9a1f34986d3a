#include <hiredis/hiredis.h>

// redisCommand is variadic; Swift calls redisCommandArgv instead. These wrap
// the reply type constants as functions so Swift need not guess macro types.
static inline int chiredis_reply_string(void) { return REDIS_REPLY_STRING; }
static inline int chiredis_reply_array(void) { return REDIS_REPLY_ARRAY; }
static inline int chiredis_reply_integer(void) { return REDIS_REPLY_INTEGER; }
static inline int chiredis_reply_nil(void) { return REDIS_REPLY_NIL; }
static inline int chiredis_reply_status(void) { return REDIS_REPLY_STATUS; }
static inline int chiredis_reply_error(void) { return REDIS_REPLY_ERROR; }
