#include <stdio.h>

#define MAX 10

/* A buffer { with a brace }. */
struct buffer {
    char *data;
    size_t len;
};

typedef struct {
    int x;
} point_t;

typedef enum { RED, GREEN } color_t;

static int count = 0;

/* Appends bytes.
 * Returns the new length. */
static size_t
buffer_append(struct buffer *b,
              const char *bytes,
              size_t n)
{
    /* } */
    return b->len + n;
}

char *buffer_name(void) { return "}"; }

int main(int argc, char **argv) {
    printf("%d\n", argc);
    return 0;
}

#ifdef DEBUG
void debug_dump(void) {
    puts("debug");
}
#endif
