#include "transport/fabric.h"
