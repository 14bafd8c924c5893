"""`--confirm`: run compiled regions under real Dynamo. Only this package imports torch."""
